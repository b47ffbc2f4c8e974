import dataclasses

import pytest

from odradek.records import Record


def test_minimal_constructor_and_defaults():
    r = Record(key=b"k", value=b"v")
    assert (r.key, r.value, r.headers, r.timestamp, r.offset) == (b"k", b"v", (), None, None)
    assert Record(b"k", b"v") == r


def test_headers_are_stored_as_tuples_whatever_sequence_is_given():
    r = Record(None, b"v", headers=[["a", b"1"], ("b", None)])  # type: ignore[list-item]
    assert r.headers == (("a", b"1"), ("b", None))
    assert type(r.headers) is tuple
    assert all(type(h) is tuple for h in r.headers)
    assert r == Record(None, b"v", headers=(("a", b"1"), ("b", None)))
    assert hash(r) == hash(Record(None, b"v", headers=(("a", b"1"), ("b", None))))


def test_frozen_and_slotted():
    r = Record(b"k", b"v")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.key = b"x"  # type: ignore[misc]
    assert not hasattr(r, "__dict__")
    assert dataclasses.replace(r, offset=5).offset == 5
