"""What ``produce`` and ``consume`` take as Kafka's console tools and kcat do.

- ``--producer-property`` / ``--consumer-property``: Kafka client config names mapped to the
  SDK's keyword arguments (:func:`client_kwargs`);
- ``--property`` on ``produce``: Kafka's ``LineMessageReader`` (``parse.key``,
  ``key.separator``, ``parse.headers``, ``headers.delimiter``, ``headers.separator``,
  ``headers.key.separator``, ``null.marker``, ``ignore.error``) — :class:`LineReader`;
- ``--property`` on ``consume``: Kafka's ``DefaultMessageFormatter`` (``print.timestamp``,
  ``print.partition``, ``print.offset``, ``print.headers``, ``print.key``, ``print.value``,
  ``key.separator``, ``line.separator``, ``headers.separator``, ``null.literal``) —
  :class:`MessageFormatter`;
- kcat's ``-f`` format strings (:func:`kcat_format`) and ``-J`` JSON envelope
  (:func:`kcat_json`).

A name the tool does not know, or a value it cannot read, raises ``ValueError`` with one line
the command prints as a usage error. Pure functions and values; thread-safe.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from odradek.client.types import ConsumerRecord

__all__ = [
    "LineReader",
    "MessageFormatter",
    "client_kwargs",
    "kcat_format",
    "kcat_json",
]


def _int(name: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"{name}: not an integer: {text!r}") from None


def _bool(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"{name}: expected true or false, not {text!r}")
    return value == "true"


def _acks(name: str, text: str) -> int:
    value = text.strip().lower()
    acks = {"all": -1, "-1": -1, "0": 0, "1": 1}
    if value not in acks:
        raise ValueError(f"{name}: expected all, -1, 0 or 1, not {text!r}")
    return acks[value]


def _choice(*choices: str) -> Callable[[str, str], str]:
    def parse(name: str, text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise ValueError(f"{name}: expected one of {', '.join(choices)}, not {text!r}")
        return value

    return parse


_Parse = Callable[[str, str], Any]

PRODUCER_PROPERTIES: Mapping[str, tuple[str, _Parse]] = {
    "acks": ("acks", _acks),
    "linger.ms": ("linger_ms", _int),
    "batch.size": ("batch_size", _int),
    "compression.type": ("compression", _choice("none", "gzip", "snappy", "lz4", "zstd")),
    "retries": ("retries", _int),
    "delivery.timeout.ms": ("delivery_timeout_ms", _int),
    "retry.backoff.ms": ("retry_backoff_ms", _int),
    "retry.backoff.max.ms": ("retry_backoff_max_ms", _int),
    "request.timeout.ms": ("request_timeout_ms", _int),
    "max.in.flight.requests.per.connection": ("max_in_flight_per_partition", _int),
    "max.request.size": ("max_request_size", _int),
    "max.block.ms": ("max_block_ms", _int),
    "metadata.max.age.ms": ("metadata_max_age_ms", _int),
}
"""Kafka producer config → (``Producer`` keyword, parser)."""

CONSUMER_PROPERTIES: Mapping[str, tuple[str, _Parse]] = {
    "auto.offset.reset": ("auto_offset_reset", _choice("earliest", "latest", "none")),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", _int),
    "fetch.min.bytes": ("fetch_min_bytes", _int),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", _int),
    "fetch.max.bytes": ("fetch_max_bytes", _int),
    "max.poll.records": ("max_poll_records", _int),
    "request.timeout.ms": ("request_timeout_ms", _int),
    "default.api.timeout.ms": ("default_api_timeout_ms", _int),
    "retry.backoff.ms": ("retry_backoff_ms", _int),
    "metadata.max.age.ms": ("metadata_max_age_ms", _int),
    "check.crcs": ("check_crcs", _bool),
    "isolation.level": ("isolation_level", _choice("read_uncommitted", "read_committed")),
}
"""Kafka consumer config → (``Consumer`` keyword, parser)."""


def client_kwargs(
    pairs: Sequence[tuple[str, str]], known: Mapping[str, tuple[str, _Parse]], what: str
) -> dict[str, Any]:
    """The SDK keyword arguments for Kafka-named ``pairs`` (later pairs win). Raises
    ``ValueError`` naming an unknown ``what`` property (with the known ones) or a bad value."""
    out: dict[str, Any] = {}
    for name, text in pairs:
        entry = known.get(name)
        if entry is None:
            raise ValueError(
                f"unknown {what} property {name!r} (known: {', '.join(sorted(known))})"
            )
        keyword, parse = entry
        out[keyword] = parse(name, text)
    return out


def _properties(
    pairs: Sequence[tuple[str, str]], known: Mapping[str, str], what: str
) -> dict[str, str]:
    out = dict(known)
    for name, value in pairs:
        if name not in known:
            raise ValueError(f"unknown {what} {name!r} (known: {', '.join(sorted(known))})")
        out[name] = value
    return out


_READER_DEFAULTS = {
    "parse.key": "false",
    "key.separator": "\t",
    "parse.headers": "false",
    "headers.delimiter": "\t",
    "headers.separator": ",",
    "headers.key.separator": ":",
    "null.marker": "",
    "ignore.error": "false",
}


@dataclass(frozen=True, slots=True)
class ParsedLine:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class LineReader:
    """Kafka's ``LineMessageReader``: a line is ``[HEADERS<headers.delimiter>][KEY<key.separator>]
    VALUE`` with headers ``k1:v1,k2:v2`` (a header without ``headers.key.separator`` has a null
    value); a key, value or header value equal to ``null.marker`` is null."""

    parse_key: bool
    key_separator: bytes
    parse_headers: bool
    headers_delimiter: bytes
    headers_separator: bytes
    headers_key_separator: bytes
    null_marker: bytes | None
    ignore_error: bool

    @classmethod
    def from_properties(cls, pairs: Sequence[tuple[str, str]]) -> LineReader:
        """Raises ``ValueError`` for an unknown property, a bad boolean or an empty
        separator."""
        p = _properties(pairs, _READER_DEFAULTS, "produce --property")
        for name in ("key.separator", "headers.delimiter", "headers.separator"):
            if not p[name]:
                raise ValueError(f"{name} must not be empty")
        if not p["headers.key.separator"]:
            raise ValueError("headers.key.separator must not be empty")
        return cls(
            parse_key=_bool("parse.key", p["parse.key"]),
            key_separator=p["key.separator"].encode(),
            parse_headers=_bool("parse.headers", p["parse.headers"]),
            headers_delimiter=p["headers.delimiter"].encode(),
            headers_separator=p["headers.separator"].encode(),
            headers_key_separator=p["headers.key.separator"].encode(),
            null_marker=p["null.marker"].encode() if p["null.marker"] else None,
            ignore_error=_bool("ignore.error", p["ignore.error"]),
        )

    def _null(self, data: bytes) -> bytes | None:
        return None if self.null_marker is not None and data == self.null_marker else data

    def parse(self, line: bytes, number: int) -> ParsedLine:
        """Split one line (without its line ending). Raises ``ValueError`` for a line without
        its headers delimiter or key separator (unless ``ignore.error``)."""
        headers: tuple[tuple[str, bytes | None], ...] = ()
        rest = line
        if self.parse_headers:
            head, found, tail = rest.partition(self.headers_delimiter)
            if found:
                headers = self._headers(head)
                rest = tail
            elif not self.ignore_error:
                raise ValueError(f"line {number} has no headers delimiter")
        key: bytes | None = None
        if self.parse_key:
            k, found, tail = rest.partition(self.key_separator)
            if found:
                key, rest = self._null(k), tail
            elif not self.ignore_error:
                raise ValueError(f"line {number} has no key separator")
        return ParsedLine(key, self._null(rest), headers)

    def _headers(self, text: bytes) -> tuple[tuple[str, bytes | None], ...]:
        out = []
        for item in text.split(self.headers_separator):
            name, found, value = item.partition(self.headers_key_separator)
            header_value = self._null(value) if found else None
            out.append((name.decode("utf-8", "backslashreplace"), header_value))
        return tuple(out)


_FORMATTER_DEFAULTS = {
    "print.timestamp": "false",
    "print.partition": "false",
    "print.offset": "false",
    "print.headers": "false",
    "print.key": "false",
    "print.value": "true",
    "key.separator": "\t",
    "line.separator": "\n",
    "headers.separator": ",",
    "null.literal": "null",
}


def _text(data: bytes | None, null: str) -> str:
    return null if data is None else data.decode("utf-8", "backslashreplace")


@dataclass(frozen=True, slots=True)
class MessageFormatter:
    """Kafka's ``DefaultMessageFormatter``: the asked-for fields in Kafka's order —
    ``CreateTime:MS``, ``Partition:P``, ``Offset:N``, headers (``k:v`` joined by
    ``headers.separator``, ``NO_HEADERS`` when none), key, value — joined by
    ``key.separator`` and ended by ``line.separator``."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: str = "\t"
    line_separator: str = "\n"
    headers_separator: str = ","
    null_literal: str = "null"

    @classmethod
    def from_properties(cls, pairs: Sequence[tuple[str, str]], **flags: bool) -> MessageFormatter:
        """``flags`` (``print_key=True``, ...) are the command's ``--print-*`` options, which
        a property may also turn on. Raises ``ValueError`` for an unknown property or a bad
        boolean."""
        p = _properties(pairs, _FORMATTER_DEFAULTS, "consume --property")
        bools = {
            name.replace(".", "_"): _bool(name, p[name])
            for name in _FORMATTER_DEFAULTS
            if name.startswith("print.")
        }
        for name, on in flags.items():
            bools[name] = bools[name] or on
        return cls(
            **bools,
            key_separator=p["key.separator"],
            line_separator=p["line.separator"],
            headers_separator=p["headers.separator"],
            null_literal=p["null.literal"],
        )

    def format(self, record: ConsumerRecord) -> str:
        fields = []
        if self.print_timestamp:
            kind = "LogAppendTime" if record.timestamp_type.value == 1 else "CreateTime"
            fields.append(f"{kind}:{record.timestamp}")
        if self.print_partition:
            fields.append(f"Partition:{record.partition}")
        if self.print_offset:
            fields.append(f"Offset:{record.offset}")
        if self.print_headers:
            if record.headers:
                fields.append(
                    self.headers_separator.join(
                        f"{k}:{_text(v, self.null_literal)}" for k, v in record.headers
                    )
                )
            else:
                fields.append("NO_HEADERS")
        if self.print_key:
            fields.append(_text(record.key, self.null_literal))
        if self.print_value:
            fields.append(_text(record.value, self.null_literal))
        return self.key_separator.join(fields) + self.line_separator


_KCAT_TOKENS = frozenset("sSRkKThtpo%")


def check_kcat_format(fmt: str) -> str:
    """argparse type for ``-f``: the format string, checked for unknown ``%`` tokens."""
    i = 0
    while i < len(fmt):
        if fmt[i] == "%":
            if i + 1 >= len(fmt) or fmt[i + 1] not in _KCAT_TOKENS:
                token = fmt[i : i + 2]
                raise ValueError(
                    f"unknown format token {token!r} (known: %s %S %R %k %K %T %h %t %p %o %%)"
                )
            i += 2
        else:
            i += 1
    return fmt


def _unescape(text: str) -> bytes:
    r"""kcat's escapes in a format string: ``\n \r \t \\`` and ``\xNN``."""
    out = bytearray()
    i = 0
    raw = text.encode()
    while i < len(raw):
        c = raw[i : i + 1]
        if c == b"\\" and i + 1 < len(raw):
            nxt = raw[i + 1 : i + 2]
            simple = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"\\": b"\\"}
            if nxt in simple:
                out += simple[nxt]
                i += 2
                continue
            if nxt == b"x":
                digits = raw[i + 2 : i + 4]
                try:
                    out.append(int(digits, 16))
                    i += 2 + len(digits)
                    continue
                except ValueError:
                    pass
        out += c
        i += 1
    return bytes(out)


def kcat_format(fmt: str, record: ConsumerRecord) -> bytes:
    """kcat's ``-f``: ``%s`` value, ``%S`` its length (-1 for null), ``%R`` that length as a
    big-endian int32, ``%k`` key, ``%K`` its length, ``%T`` timestamp (ms), ``%h`` headers
    (``n=v`` CSV), ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%%`` a percent sign; a
    null key or value prints as nothing. The bytes of key and value are written as they are."""
    out = bytearray()
    literal: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            out += _unescape("".join(literal))
            literal = []
            out += b"%" if fmt[i + 1] == "%" else _token(fmt[i + 1], record)
            i += 2
        else:
            literal.append(fmt[i])
            i += 1
    out += _unescape("".join(literal))
    return bytes(out)


def _token(token: str, r: ConsumerRecord) -> bytes:
    if token == "s":
        return r.value or b""
    if token == "S":
        return str(-1 if r.value is None else len(r.value)).encode()
    if token == "R":
        return struct.pack(">i", -1 if r.value is None else len(r.value))
    if token == "k":
        return r.key or b""
    if token == "K":
        return str(-1 if r.key is None else len(r.key)).encode()
    if token == "T":
        return str(r.timestamp).encode()
    if token == "h":
        return b",".join(k.encode() + b"=" + (v or b"") for k, v in r.headers)
    if token == "t":
        return r.topic.encode()
    if token == "p":
        return str(r.partition).encode()
    if token == "o":
        return str(r.offset).encode()
    return b"%" + token.encode()


def kcat_json(record: ConsumerRecord) -> str:
    """kcat's ``-J`` envelope, on one line: topic, partition, offset, ``tstype``
    (``create``/``logappend``), ``ts``, ``broker`` (-1: the SDK does not say which node served
    the fetch), ``headers`` as kcat writes them (a flat ``[name, value, ...]`` list, present
    only when the record has headers), ``key`` and ``payload`` (strings, or null; bytes that
    are not UTF-8 as ``\\xNN``)."""
    envelope: dict[str, Any] = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "tstype": "logappend" if record.timestamp_type.value == 1 else "create",
        "ts": record.timestamp,
        "broker": -1,
    }
    if record.headers:
        flat: list[str | None] = []
        for k, v in record.headers:
            flat.extend([k, None if v is None else _text(v, "")])
        envelope["headers"] = flat
    envelope["key"] = None if record.key is None else _text(record.key, "")
    envelope["payload"] = None if record.value is None else _text(record.value, "")
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
