"""Kafka's request and response frames, sans-io, through the ``kio`` codec.

A Kafka frame is a 4-byte big-endian size, then that many bytes: for a request, a request
header and the request body; for a response, a response header and the response body.

* The request header is v1 (``api_key``, ``api_version``, ``correlation_id``, ``client_id``)
  for a non-flexible request version and v2 (v1 + tagged fields) for a flexible one; v1 is a
  prefix of v2, so the header is first read as v1 to learn the API and version, then again as
  v2 when that version is flexible.
* The response header is v0 (``correlation_id``) for a non-flexible response and v1 (+ tagged
  fields) for a flexible one — except ApiVersions, whose response header is always v0 (so that
  a client that sent a version the broker does not know can still read the answer:
  ``ApiVersionsResponse.json``'s comment; one byte more crashes librdkafka).

Everything here is a pure function of bytes: the connection loop (:mod:`node.kafka_door.server`)
does the I/O. Errors are :class:`FrameError` (the connection is closed, as Kafka's
``SocketServer`` closes a connection whose request it cannot parse).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import struct
import typing
from dataclasses import dataclass
from typing import Any

from kio.index import load_payload_module
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i32

__all__ = [
    "API_VERSIONS_KEY",
    "FrameError",
    "RequestHeader",
    "SIZE",
    "decode_body",
    "encode_response",
    "read_header",
    "request_class",
    "response_class",
]

SIZE = struct.Struct(">i")
"""The frame's size prefix."""

API_VERSIONS_KEY = 18

_read_header_v1 = entity_reader(RequestHeaderV1)
_read_header_v2 = entity_reader(RequestHeaderV2)
_write_header_v0 = entity_writer(ResponseHeaderV0)
_write_header_v1 = entity_writer(ResponseHeaderV1)


class FrameError(Exception):
    """A frame that cannot be parsed: the connection is closed."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """What the request header says, and where the body starts in the frame."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int


@functools.cache
def request_class(api_key: int, api_version: int) -> type[Any]:
    """kio's request class of this API and version. Raises ``LookupError`` when kio has
    none (an unknown key or a version outside kio's range). Cached: kio resolves a module
    and this scans it (~13 µs), once per API version rather than once per request."""
    try:
        module = load_payload_module(api_key, api_version, EntityType.request)
    except Exception as e:  # kio's UnknownAPIKey / UnknownEntity
        raise LookupError(f"no request schema for API {api_key} v{api_version}") from e
    return _payload_class(module, "Request")


@functools.cache
def response_class(api_key: int, api_version: int) -> type[Any]:
    """kio's response class of this API and version (``LookupError`` as above; cached)."""
    try:
        module = load_payload_module(api_key, api_version, EntityType.response)
    except Exception as e:
        raise LookupError(f"no response schema for API {api_key} v{api_version}") from e
    return _payload_class(module, "Response")


def _payload_class(module: Any, suffix: str) -> type[Any]:
    for name in dir(module):
        value = getattr(module, name)
        if (
            isinstance(value, type)
            and name.endswith(suffix)
            and getattr(value, "__type__", None) in (EntityType.request, EntityType.response)
            and value.__module__ == module.__name__
        ):
            return value
    raise LookupError(f"{module.__name__} has no {suffix} class")


def read_header(frame: bytes | memoryview, flexible: bool) -> RequestHeader:
    """The request header of ``frame`` (the bytes after the size prefix); ``flexible``: the
    request version is a flexible one (header v2). Raises :class:`FrameError`."""
    try:
        header, size = (_read_header_v2 if flexible else _read_header_v1)(frame, 0)
    except Exception as e:
        raise FrameError(f"unreadable request header: {e}") from None
    return RequestHeader(
        int(header.request_api_key),
        int(header.request_api_version),
        int(header.correlation_id),
        header.client_id,
        size,
    )


def peek_api(frame: bytes | memoryview) -> tuple[int, int]:
    """``(api_key, api_version)``: the first four bytes of every request header."""
    if len(frame) < 8:
        raise FrameError(f"a request of {len(frame)} bytes has no header")
    key, version = struct.unpack_from(">hh", frame, 0)
    return int(key), int(version)


def decode_body(cls: type[Any], frame: bytes | memoryview, offset: int) -> Any:
    """The request body at ``frame[offset:]`` as ``cls``. Bytes after the body are ignored, as
    Kafka's ``RequestContext.parseRequest`` ignores them (librdkafka's AlterUserScramCredentials
    ends with one more tag buffer). Raises :class:`FrameError` for a body that cannot be read."""
    try:
        body, _ = _reader(cls)(frame, offset)
    except Exception as e:
        raise FrameError(f"unreadable {cls.__name__} v{cls.__version__}: {e}") from None
    _check_nulls(body)
    return body


def _check_nulls(entity: Any) -> None:
    """Kafka's generated readers refuse a null (length -1) in a field that is not nullable at
    the request's version ("non-nullable field ... was serialized as null"): the request cannot
    be parsed, and the connection is closed. kio reads it as None; this refuses it the same way,
    before a handler meets it. Raises :class:`FrameError`."""
    for name, nullable, nested in _null_spec(type(entity)):
        value = getattr(entity, name)
        if value is None:
            if not nullable:
                raise FrameError(
                    f"non-nullable field {type(entity).__name__}.{name} was serialized as null"
                )
        elif nested:
            for item in value if isinstance(value, tuple) else (value,):
                _check_nulls(item)


_null_specs: dict[type[Any], tuple[tuple[str, bool, bool], ...]] = {}


def _null_spec(cls: type[Any]) -> tuple[tuple[str, bool, bool], ...]:
    """Per field of a kio entity: its name, whether it is nullable, whether it holds entities
    (one, or a tuple of them) to check in turn."""
    spec = _null_specs.get(cls)
    if spec is None:
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            args = typing.get_args(hint)
            nullable = type(None) in args
            inner = [a for a in args if a is not type(None) and a is not Ellipsis] or [hint]
            nested = any(
                dataclasses.is_dataclass(a)
                or any(dataclasses.is_dataclass(b) for b in typing.get_args(a))
                for a in inner
            )
            out.append((f.name, nullable, nested))
        spec = _null_specs[cls] = tuple(out)
    return spec


_readers: dict[type[Any], Any] = {}
_writers: dict[type[Any], Any] = {}


def _reader(cls: type[Any]) -> Any:
    reader = _readers.get(cls)
    if reader is None:
        reader = _readers[cls] = entity_reader(cls)
    return reader


def _writer(cls: type[Any]) -> Any:
    writer = _writers.get(cls)
    if writer is None:
        writer = _writers[cls] = entity_writer(cls)
    return writer


def encode_body(body: Any) -> bytes:
    """A response body's bytes, no header."""
    out = io.BytesIO()
    _writer(type(body))(out, body)
    return out.getvalue()


def response_header(api_key: int, correlation_id: int, flexible: bool) -> bytes:
    """The response header: v1 for a flexible response, v0 otherwise and for ApiVersions."""
    out = io.BytesIO()
    if flexible and api_key != API_VERSIONS_KEY:
        _write_header_v1(out, ResponseHeaderV1(correlation_id=i32(correlation_id)))
    else:
        _write_header_v0(out, ResponseHeaderV0(correlation_id=i32(correlation_id)))
    return out.getvalue()


def encode_response(api_key: int, correlation_id: int, body: Any) -> bytes:
    """A whole response frame (size prefix, header, body) for a kio response entity."""
    payload = response_header(api_key, correlation_id, bool(body.__flexible__)) + encode_body(body)
    return SIZE.pack(len(payload)) + payload
