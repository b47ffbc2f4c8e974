"""The error codes in a Kafka answer, counted as Kafka's ``AbstractResponse.errorCounts`` counts
them for its ``ErrorsPerSec`` metric: every error-code field of the response, at the top and
in each nested topic, partition or member, once per occurrence.

Unlike Kafka, no error (code 0) is not counted: the metric family counts errors, and the request
counts give the rest. Pure; thread-safe (a per-class cache of field names, filled idempotently).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kio.schema.errors import ErrorCode

__all__ = ["add_error_counts", "count_error", "error_name"]

_PLANS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _plan(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(its error-code fields, its fields that hold entities): kio marks each primitive field
    with its ``kafka_type`` (``error_code`` for error codes) and leaves entity fields unmarked,
    so the walk reads only those two kinds."""
    plan = _PLANS.get(cls)
    if plan is None:
        fields = dataclasses.fields(cls)
        plan = _PLANS[cls] = (
            tuple(f.name for f in fields if f.metadata.get("kafka_type") == "error_code"),
            tuple(f.name for f in fields if "kafka_type" not in f.metadata),
        )
    return plan


def add_error_counts(entity: Any, counts: dict[int, int]) -> None:
    """Adds the nonzero error codes of ``entity`` (a kio response or any entity in it) and of
    every entity nested in it to ``counts`` (code → occurrences)."""
    errors, nested = _plan(type(entity))
    for name in errors:
        count_error(counts, getattr(entity, name))
    for name in nested:
        value = getattr(entity, name)
        if isinstance(value, tuple):
            for item in value:
                add_error_counts(item, counts)
        elif value is not None:
            add_error_counts(value, counts)


def count_error(counts: dict[int, int], code: int) -> None:
    """Adds one occurrence of ``code`` to ``counts``, unless it is no error (0)."""
    code = int(code)
    if code:
        counts[code] = counts.get(code, 0) + 1


def error_name(code: int) -> str:
    """Kafka's name of an error code (``Errors``: NOT_LEADER_OR_FOLLOWER), or the number."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)
