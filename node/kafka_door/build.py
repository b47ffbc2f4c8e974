"""Building kio response entities of any version from plain values.

kio has one class per API version, each with the fields of that version. A handler answers every
version it serves from the same values: :func:`make` keeps the fields the class has (a field of a
newer version is dropped for an older one), converts error codes (``int`` → kio's ``ErrorCode``),
millisecond durations and times (``int`` → ``timedelta`` / ``datetime``, -1 → no time) and topic
ids (``str`` → ``UUID``) where the schema says so, and leaves the
class's defaults for what is not given. :func:`nested` finds a version's nested class by name.
:func:`respond` is every handler's one response path: the answer's class is the request's own
key and version.

Pure; thread-safe.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ZERO_UUID = uuid.UUID(int=0)

__all__ = ["error_code", "make", "nested", "respond", "response_class_of"]


_field_kinds: dict[type[Any], dict[str, str]] = {}


def _fields(cls: type[Any]) -> dict[str, str]:
    """Field name -> kafka_type (``""`` for entity/array fields)."""
    kinds = _field_kinds.get(cls)
    if kinds is None:
        kinds = _field_kinds[cls] = {
            f.name: str(f.metadata.get("kafka_type", "")) for f in dataclasses.fields(cls) if f.init
        }
    return kinds


def error_code(code: int) -> ErrorCode:
    """kio's ErrorCode of an int code (an unknown code: UNKNOWN_SERVER_ERROR)."""
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.unknown_server_error


def make(cls: type[Any], **values: Any) -> Any:
    """An instance of ``cls`` from those of ``values`` it has fields for."""
    fields = _fields(cls)
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        kind = fields.get(name)
        if kind is None:
            continue
        if kind == "error_code" and not isinstance(value, ErrorCode):
            value = error_code(int(value))
        elif kind.startswith("timedelta") and isinstance(value, int):
            value = datetime.timedelta(milliseconds=value)
        elif kind == "datetime_i64" and isinstance(value, int):
            # -1: no time (kio's None)
            value = None if value < 0 else _EPOCH + datetime.timedelta(milliseconds=value)
        elif kind == "uuid" and isinstance(value, str):
            value = uuid.UUID(value) if value else _ZERO_UUID
        kwargs[name] = value
    return cls(**kwargs)


_nested: dict[tuple[str, str], type[Any]] = {}


def nested(cls: type[Any], name: str) -> type[Any]:
    """The class ``name`` defined beside ``cls`` (the same API version)."""
    key = (cls.__module__, name)
    found = _nested.get(key)
    if found is None:
        value = getattr(sys.modules[cls.__module__], name)
        if not isinstance(value, type):
            raise LookupError(f"{cls.__module__}.{name} is not a class")
        found = _nested[key] = value
    return found


def response_class_of(ctx: RequestContext) -> type[Any]:
    """The response class of the request ``ctx`` answers: its API key and version (the one
    place a handler's answer gets its class)."""
    return response_class(ctx.api_key, ctx.api_version)


def respond(ctx: RequestContext, **fields: Any) -> Any:
    """The answer to the request of ``ctx``, built by :func:`make` from ``fields`` (the
    response's own fields; ``throttle_time`` 0 unless given)."""
    fields.setdefault("throttle_time", 0)
    return make(response_class_of(ctx), **fields)
