"""The error codes in a Kafka answer, counted as Kafka's ``AbstractResponse.errorCounts`` counts
them for its ``ErrorsPerSec`` metric: every ``error_code`` field of the response, at the top and
in each nested topic, partition or member, once per occurrence.

Unlike Kafka, no error (code 0) is not counted: the metric family counts errors, and the request
counts give the rest. Pure; thread-safe (a per-class cache of field names, filled idempotently).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kio.schema.errors import ErrorCode

__all__ = ["add_error_counts", "error_name"]

_ERROR_FIELD = "error_code"
_FIELDS: dict[type, tuple[str, ...]] = {}


def add_error_counts(entity: Any, counts: dict[int, int]) -> None:
    """Adds the nonzero error codes of ``entity`` (a kio response or any entity in it) and of
    every entity nested in it to ``counts`` (code → occurrences)."""
    cls = type(entity)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(entity))
    for name in names:
        value = getattr(entity, name)
        if name == _ERROR_FIELD:
            code = int(value)
            if code:
                counts[code] = counts.get(code, 0) + 1
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    add_error_counts(item, counts)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            add_error_counts(value, counts)


def error_name(code: int) -> str:
    """Kafka's name of an error code (``Errors``: NOT_LEADER_OR_FOLLOWER), or the number."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)
