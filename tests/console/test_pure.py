"""The console's pure parts: where a browse starts, what a filter keeps, the sentences of
refusals. No cluster, no browser."""

from __future__ import annotations

import pytest

from odradek.client.types import ConsumerRecord
from odradek.console.browse import RecordFilter, Seek, headers_from_form, start_offset
from odradek.console.refusals import Action, ActionError, acting, sentence
from odradek.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    InvalidPartitionsError,
    SaslAuthenticationFailedError,
    TopicAuthorizationFailedError,
)
from odradek.records import TimestampType


def record(
    key: bytes | None, value: bytes | None, *headers: tuple[str, bytes | None]
) -> ConsumerRecord:
    return ConsumerRecord("t", 0, 7, 1000, TimestampType.CREATE_TIME, key, value, headers, 0)


def test_start_offsets_stay_within_the_log() -> None:
    assert start_offset(Seek("oldest"), 10, 100, 5, None) == 10
    assert start_offset(Seek("newest"), 10, 100, 5, None) == 95
    assert start_offset(Seek("newest"), 10, 12, 5, None) == 10
    assert start_offset(Seek("offset", 50), 10, 100, 5, None) == 50
    assert start_offset(Seek("offset", 5), 10, 100, 5, None) == 10
    assert start_offset(Seek("offset", 500), 10, 100, 5, None) == 100
    assert start_offset(Seek("timestamp", 1), 10, 100, 5, 42) == 42
    assert start_offset(Seek("timestamp", 1), 10, 100, 5, None) == 100  # none at or after it
    with pytest.raises(ValueError, match="needs a value"):
        Seek("offset")
    with pytest.raises(ValueError, match="seek must be one of"):
        Seek("middle")  # type: ignore[arg-type]


def test_filters_on_key_value_and_headers() -> None:
    r = record(b"user-7", b'{"paid": true}', ("trace", b"abc-123"), ("empty", None))
    assert RecordFilter("user-7", "key").matches(r)
    assert not RecordFilter("user-7", "value").matches(r)
    assert RecordFilter("paid", "value").matches(r)
    assert RecordFilter("abc", "header").matches(r)
    assert RecordFilter("trace", "header").matches(r)  # a header's name
    assert RecordFilter(r"^abc-\d+$", "header", regex=True).matches(r)
    assert not RecordFilter(r"^abc$", "header", regex=True).matches(r)
    assert RecordFilter("abc", "any").matches(r)
    assert not RecordFilter("x", "any").matches(record(None, None))
    with pytest.raises(ValueError, match="not a regular expression"):
        RecordFilter("(", regex=True)


def test_headers_typed_in_the_form() -> None:
    assert headers_from_form(["source: console", "", "a:b:c"]) == [
        ("source", b"console"),
        ("a", b"b:c"),
    ]
    with pytest.raises(ValueError, match="name: value"):
        headers_from_form(["no separator"])


def test_refusals_are_sentences() -> None:
    read = Action("Read", "topic", "orders")
    assert sentence(TopicAuthorizationFailedError("x"), "User:alice", read) == (
        "User:alice may not Read topic orders",
        403,
    )
    assert sentence(
        GroupAuthorizationFailedError("x"), "User:bob", Action("Describe", "group", "billing")
    ) == ("User:bob may not Describe group billing", 403)
    assert sentence(
        ClusterAuthorizationFailedError("x"), "User:bob", Action("Alter", "cluster")
    ) == ("User:bob may not Alter the cluster", 403)
    assert sentence(SaslAuthenticationFailedError("x"), "-", read)[1] == 401
    text, status = sentence(InvalidPartitionsError("must grow"), "-", Action("Alter", "topic", "t"))
    assert text == "Alter topic t failed: INVALID_PARTITIONS: must grow" and status == 400
    with pytest.raises(ActionError) as caught, acting("User:alice", read):
        raise TopicAuthorizationFailedError("refused")
    assert caught.value.sentence == "User:alice may not Read topic orders"
