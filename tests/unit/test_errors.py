import pytest

from odradek import errors


def test_codes_match_kafka() -> None:
    assert errors.OffsetOutOfRangeError.code == 1
    assert errors.CorruptRecordError.code == 2
    assert errors.NotLeaderOrFollowerError.code == 6
    assert errors.MessageTooLargeError.code == 10
    assert errors.RecordListTooLargeError.code == 18
    assert errors.FencedLeaderEpochError.code == 74
    assert errors.InvalidRecordError.code == 87


def test_error_for_code_round_trips_every_code() -> None:
    for code, cls in errors.ERRORS_BY_CODE.items():
        err = errors.error_for_code(code, "boom")
        assert type(err) is cls
        assert err.code == code
        assert str(err) == f"{cls.name} ({code}): boom"


def test_unknown_code_and_none() -> None:
    assert isinstance(errors.error_for_code(9999), errors.UnknownServerError)
    with pytest.raises(ValueError):
        errors.error_for_code(0)
