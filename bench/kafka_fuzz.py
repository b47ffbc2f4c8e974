"""A fuzzer for the Kafka door: seeded mutations of valid Kafka requests, and what each must get.

Every frame is built from a valid request of an API the door serves (hand-built with ``struct``
and checked against kio's request readers by :func:`self_check`), then mutated:

* size prefix lies: too long (the server waits for bytes that never come; the client then
  half-closes and the server must close), too short, negative, over ``socket.request.max.bytes``;
* truncated bodies, random bytes after a valid header, random byte flips in a valid body;
* unknown API keys, versions above / below the advertised range, Produce v0-v2;
* valid Produce v3-v8 headers carrying corrupt record batches: bad CRC, lying batch length,
  wrong magic, lying records count, lying record length, garbage under a compression codec,
  a truncated batch (and the same with acks=0);
* huge and negative array counts, strings with lying lengths (client id, topic names);
* SASL requests out of order on a PLAINTEXT listener.

Each frame's outcome is checked (:func:`classify`): a well-formed response carrying the
request's correlation id (decoded with kio's response reader; a Produce of a corrupt batch must
carry one of the error codes Kafka uses for it), or the connection closed by the server with no
bytes. A frame that gets neither within the deadline, a response that does not decode, Python
text in a response, a corrupt batch accepted, or an answer where Kafka closes the connection, is
a *finding*, kept with its frame's bytes (hex) and its seed position for a reproducer.

    python -m bench.kafka_fuzz --bootstrap 127.0.0.1:PORT --topic T [--frames 100000] [--seed N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crc32c
from kio.serial import entity_reader

from node.kafka_door.frames import decode_body, read_header, request_class, response_class
from odradek.records import Record, build_batch

__all__ = [
    "Case",
    "FuzzReport",
    "Generator",
    "WellBehaved",
    "leader_partition",
    "probe",
    "run_fuzz",
    "self_check",
]

# the APIs the door serves: key -> (name, lowest served, highest, lowest advertised)
SERVED: dict[int, tuple[str, int, int, int]] = {
    0: ("Produce", 3, 8, 0),
    1: ("Fetch", 4, 11, 4),
    2: ("ListOffsets", 1, 5, 1),
    3: ("Metadata", 0, 12, 0),
    10: ("FindCoordinator", 0, 2, 0),
    17: ("SaslHandshake", 1, 1, 0),
    18: ("ApiVersions", 0, 3, 0),
    21: ("DeleteRecords", 0, 1, 0),
    22: ("InitProducerId", 0, 1, 0),
    23: ("OffsetForLeaderEpoch", 2, 3, 2),
    36: ("SaslAuthenticate", 0, 1, 0),
}
VALID_MAX = {3: 8}
"""The highest version the generator builds a valid body of, where below the served one (its
bodies and headers are non-flexible ones)."""
DOOR_KEYS = frozenset(
    {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 28}
    | {29, 30, 31, 32, 33, 35, 36, 37}
    | {42, 43, 44, 45, 46, 47, 50, 51, 60, 61, 65, 66, 68, 69, 75}
    | {76, 77, 78, 79, 90, 91, 92}  # share groups (KIP-932)
)
"""Every API key the door serves (tests/kafka/test_fuzz.py holds it equal to what ApiVersions
advertises, so that a newly served API cannot be fuzzed as an unknown one: a junk body that
happens to parse would then be answered, as it should)."""
UNKNOWN_KEYS = [
    *(k for k in range(75) if k not in DOOR_KEYS),
    100,
    999,
    32767,
    -1,
    -32768,
]
# what Kafka answers a Produce of a corrupt batch with: CORRUPT_MESSAGE, MESSAGE_TOO_LARGE,
# INVALID_REQUEST, UNSUPPORTED_FOR_MESSAGE_FORMAT, UNSUPPORTED_COMPRESSION_TYPE, INVALID_RECORD
CORRUPT_BATCH_CODES = frozenset({2, 10, 42, 43, 76, 87})
ILLEGAL_SASL_STATE = 34
UNSUPPORTED_VERSION = 35
MAX_REQUEST_BYTES = 100 * 1024 * 1024

# outcomes
ANSWERED = "answered"  # a well-formed response, error code 0 where it has one
REFUSED = "refused_with_error"  # a well-formed response carrying an error code
CLOSED = "closed"  # the server closed the connection, no bytes
# findings
HANG = "finding_hang"
MALFORMED = "finding_malformed_response"
PYTHON_TEXT = "finding_python_text"
CORRUPT_ACCEPTED = "finding_corrupt_batch_accepted"
ANSWER_NOT_CLOSE = "finding_answered_instead_of_closing"
OPEN_AFTER = "finding_left_open"
CLOSED_NOT_ANSWER = "finding_closed_instead_of_answering"
TRACEBACK = "finding_traceback_in_node_log"
FINDINGS = (
    HANG,
    MALFORMED,
    PYTHON_TEXT,
    CORRUPT_ACCEPTED,
    ANSWER_NOT_CLOSE,
    OPEN_AFTER,
    CLOSED_NOT_ANSWER,
    TRACEBACK,
)

# what a case expects
EXPECT_ANSWER = "answer"  # a valid request: a decodable response
EXPECT_CLOSE = "close"  # Kafka closes the connection
EXPECT_EITHER = "answer_or_close"
EXPECT_PRODUCE_ERROR = "produce_error"  # a response whose every partition has a corrupt-batch code
EXPECT_ERROR_THEN_CLOSE = "error_then_close"  # SASL out of order
EXPECT_UNSUPPORTED = "unsupported_version"  # ApiVersions of a version not served


# -- primitives ---------------------------------------------------------------------------------
def _i8(v: int) -> bytes:
    return struct.pack(">b", v)


def _i16(v: int) -> bytes:
    return struct.pack(">h", v)


def _i32(v: int) -> bytes:
    return struct.pack(">i", v)


def _i64(v: int) -> bytes:
    return struct.pack(">q", v)


def _str(s: str | None) -> bytes:
    if s is None:
        return _i16(-1)
    raw = s.encode()
    return _i16(len(raw)) + raw


def _bytes32(b: bytes | None) -> bytes:
    if b is None:
        return _i32(-1)
    return _i32(len(b)) + b


def _array(items: list[bytes]) -> bytes:
    return _i32(len(items)) + b"".join(items)


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _compact_str(s: str) -> bytes:
    raw = s.encode()
    return _uvarint(len(raw) + 1) + raw


def header(key: int, version: int, correlation_id: int, client_id: str | None = "fuzz") -> bytes:
    """Request header v1, or v2 (one empty tagged-field section more) for ApiVersions v3."""
    head = _i16(key) + _i16(version) + _i32(correlation_id) + _str(client_id)
    if key == 18 and version >= 3:
        head += b"\x00"
    return head


def frame(payload: bytes) -> bytes:
    return _i32(len(payload)) + payload


# -- valid request bodies -----------------------------------------------------------------------
def body(key: int, version: int, topic: str, partition: int, records: bytes | None = None) -> bytes:
    """A valid request body of ``key`` v``version`` about ``topic``-``partition`` (Produce:
    acks=1 and ``records``). Metadata asks for every topic (so that a mutation cannot name, and
    auto-create, a new one)."""
    if key == 0:
        part = _i32(partition) + _bytes32(records)
        return _str(None) + _i16(1) + _i32(30_000) + _array([_str(topic) + _array([part])])
    if key == 1:
        out = _i32(-1) + _i32(0) + _i32(1) + _i32(1024 * 1024) + _i8(0)
        if version >= 7:
            out += _i32(0) + _i32(-1)
        part = _i32(partition)
        if version >= 9:
            part += _i32(-1)
        part += _i64(0)
        if version >= 5:
            part += _i64(-1)
        part += _i32(1024 * 1024)
        out += _array([_str(topic) + _array([part])])
        if version >= 7:
            out += _array([])
        if version >= 11:
            out += _str("")
        return out
    if key == 2:
        out = _i32(-1)
        if version >= 2:
            out += _i8(0)
        part = _i32(partition)
        if version >= 4:
            part += _i32(-1)
        part += _i64(-1)
        return out + _array([_str(topic) + _array([part])])
    if key == 3:
        out = _array([]) if version == 0 else _i32(-1)
        if version >= 4:
            out += _i8(0)
        if version >= 8:
            out += _i8(0) + _i8(0)
        return out
    if key == 10:
        out = _str("fuzz-group")
        if version >= 1:
            out += _i8(0)
        return out
    if key == 17:
        return _str("SCRAM-SHA-256")
    if key == 18:
        if version >= 3:
            return _compact_str("fuzz") + _compact_str("1.0") + b"\x00"
        return b""
    if key == 21:
        return _array([_str(topic) + _array([_i32(partition) + _i64(0)])]) + _i32(1000)
    if key == 22:
        return _str(None) + _i32(60_000)
    if key == 23:
        out = _i32(-1) if version >= 3 else b""
        return out + _array([_str(topic) + _array([_i32(partition) + _i32(-1) + _i32(0)])])
    if key == 36:
        return _bytes32(b"n,,n=fuzz,r=abc")
    raise ValueError(f"no body for API {key}")


# -- record batches -----------------------------------------------------------------------------
# offsets in a v2 record batch (DefaultRecordBatch)
_LENGTH, _MAGIC, _CRC, _ATTRIBUTES, _COUNT, _RECORDS = 8, 16, 17, 21, 57, 61


def _fix_crc(batch: bytearray) -> bytearray:
    struct.pack_into(">I", batch, _CRC, crc32c.crc32c(bytes(batch[_ATTRIBUTES:])))
    return batch


def corrupt_batch(rng: random.Random, batch: bytes) -> tuple[str, bytes]:
    """One corruption of a valid v2 batch, always invalid: (its name, the bytes)."""
    b = bytearray(batch)
    kind = rng.choice(
        [
            "bad_crc",
            "length_longer",
            "length_shorter",
            "wrong_magic",
            "count_more",
            "count_fewer",
            "count_negative",
            "record_length_lie",
            "compressed_garbage",
            "truncated_batch",
        ]
    )
    if kind == "bad_crc":
        at = rng.randrange(_ATTRIBUTES, len(b))
        b[at] ^= rng.randrange(1, 256)
    elif kind == "length_longer":
        struct.pack_into(">i", b, _LENGTH, len(b) - 12 + rng.randrange(1, 1 << 20))
    elif kind == "length_shorter":
        struct.pack_into(">i", b, _LENGTH, rng.randrange(0, len(b) - 12))
    elif kind == "wrong_magic":
        b[_MAGIC] = rng.choice([0, 1, 3, 4, 127, 255])
    elif kind == "count_more":
        struct.pack_into(
            ">i", b, _COUNT, struct.unpack_from(">i", b, _COUNT)[0] + rng.randrange(1, 1000)
        )
        _fix_crc(b)
    elif kind == "count_fewer":
        struct.pack_into(">i", b, _COUNT, struct.unpack_from(">i", b, _COUNT)[0] - 1)
        _fix_crc(b)
    elif kind == "count_negative":
        struct.pack_into(">i", b, _COUNT, -rng.randrange(1, 1 << 31))
        _fix_crc(b)
    elif kind == "record_length_lie":
        # the first record's length is a zigzag varint of one byte for small records
        b[_RECORDS] = rng.choice([0x01, 0x7E, 0x02, 0x7F])
        _fix_crc(b)
    elif kind == "compressed_garbage":
        struct.pack_into(">h", b, _ATTRIBUTES, rng.choice([1, 2, 3, 4, 5, 6, 7]))
        for i in range(_RECORDS, len(b)):
            b[i] = rng.randrange(256)
        _fix_crc(b)
    else:  # truncated_batch
        b = b[: rng.randrange(1, len(b))]
    return kind, bytes(b)


# -- cases --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Case:
    """One fuzzed frame: the bytes to send and what they must get."""

    kind: str
    data: bytes
    correlation_id: int
    api_key: int
    api_version: int
    expect: str
    half_close: bool = False
    """Shut our write side after sending: the server waits for bytes that never come."""


class Generator:
    """Seeded cases against ``topic``-``partition`` (a partition the target node leads)."""

    def __init__(self, seed: int, topic: str, partition: int) -> None:
        self.rng = random.Random(seed)
        self.topic = topic
        self.partition = partition
        values = [
            Record(None, bytes(self.rng.randrange(256) for _ in range(100))) for _ in range(3)
        ]
        self.batch = build_batch(values)

    def _cid(self) -> int:
        return self.rng.randrange(-(1 << 31), 1 << 31)

    def _served(self) -> tuple[int, int]:
        key = self.rng.choice([k for k in SERVED if k not in (17, 36)])
        _, low, high, _ = SERVED[key]
        return key, self.rng.randint(low, VALID_MAX.get(key, high))

    def _valid(self, key: int, version: int, cid: int) -> bytes:
        records = self.batch if key == 0 else None
        return header(key, version, cid) + body(key, version, self.topic, self.partition, records)

    def next(self) -> Case:
        r = self.rng
        cid = self._cid()
        kind = r.choices(
            [
                "valid",
                "byte_flips",
                "truncated_body",
                "random_body",
                "unknown_key",
                "version_out_of_range",
                "produce_v0_v2",
                "size_too_long",
                "size_too_short",
                "size_negative",
                "size_over_max",
                "corrupt_batch",
                "corrupt_batch_acks0",
                "huge_array",
                "lying_string",
                "sasl_out_of_order",
            ],
            weights=[10, 14, 8, 8, 5, 6, 3, 3, 4, 2, 2, 16, 2, 6, 6, 5],
        )[0]
        if kind == "valid":
            key, version = self._served()
            return Case(
                kind, frame(self._valid(key, version, cid)), cid, key, version, EXPECT_ANSWER
            )
        if kind == "byte_flips":
            key, version = self._served()
            flipped = bytearray(self._valid(key, version, cid))
            start = len(header(key, version, cid))
            if key == 1:
                start += 16  # not max_wait / min_bytes: a long poll is not a hang
            if start < len(flipped):
                for _ in range(r.randint(1, 4)):
                    at = r.randrange(start, len(flipped))
                    flipped[at] = r.randrange(256)
            return Case(kind, frame(bytes(flipped)), cid, key, version, EXPECT_EITHER)
        if kind == "truncated_body":
            key, version = self._served()
            payload = self._valid(key, version, cid)
            cut = payload[: r.randrange(0, len(payload))]
            return Case(kind, frame(cut), cid, key, version, EXPECT_EITHER)
        if kind == "random_body":
            key, version = self._served()
            junk = bytes(r.randrange(256) for _ in range(r.randint(1, 64)))
            return Case(
                kind, frame(header(key, version, cid) + junk), cid, key, version, EXPECT_EITHER
            )
        if kind == "unknown_key":
            key = r.choice(UNKNOWN_KEYS)
            version = r.randint(0, 12)
            junk = bytes(r.randrange(256) for _ in range(r.randint(0, 32)))
            return Case(
                kind, frame(header(key, version, cid) + junk), cid, key, version, EXPECT_CLOSE
            )
        if kind == "version_out_of_range":
            key = r.choice(list(SERVED))
            _, _, high, advertised_low = SERVED[key]
            below = [*range(-3, advertised_low), -32768]
            above = [high + 1, high + 2, high + 7, 32767]
            version = r.choice(below + above)
            junk = bytes(r.randrange(256) for _ in range(r.randint(0, 16)))
            data = frame(header(key, version, cid) + (b"" if key == 18 else junk))
            expect = EXPECT_UNSUPPORTED if key == 18 else EXPECT_CLOSE
            return Case(kind, data, cid, key, version, expect)
        if kind == "produce_v0_v2":
            version = r.randint(0, 2)
            payload = (
                header(0, version, cid) + body(0, 3, self.topic, self.partition, self.batch)[2:]
            )
            return Case(kind, frame(payload), cid, 0, version, EXPECT_CLOSE)
        if kind in ("size_too_long", "size_too_short"):
            key, version = self._served()
            payload = self._valid(key, version, cid)
            if kind == "size_too_long":
                lie = len(payload) + r.randint(1, 4096)
                expect = EXPECT_CLOSE
            else:
                lie = r.randrange(0, len(payload))
                expect = EXPECT_EITHER
            return Case(kind, _i32(lie) + payload, cid, key, version, expect, half_close=True)
        if kind == "size_negative":
            return Case(kind, _i32(-r.randint(1, 1 << 31)) + b"\x00" * 8, cid, 18, 0, EXPECT_CLOSE)
        if kind == "size_over_max":
            lie = r.randint(MAX_REQUEST_BYTES + 1, (1 << 31) - 1)
            return Case(kind, _i32(lie) + header(18, 0, cid), cid, 18, 0, EXPECT_CLOSE)
        if kind in ("corrupt_batch", "corrupt_batch_acks0"):
            version = r.randint(3, 8)
            name, records = corrupt_batch(r, self.batch)
            produce = bytearray(body(0, version, self.topic, self.partition, records))
            acks = 0 if kind == "corrupt_batch_acks0" else r.choice([1, -1])
            struct.pack_into(">h", produce, 2, acks)
            expect = EXPECT_CLOSE if acks == 0 else EXPECT_PRODUCE_ERROR
            data = frame(header(0, version, cid) + bytes(produce))
            if acks == 0:
                # acks=0 gets no answer: an ApiVersions after it on the same connection is
                # answered only if the corrupt batch was taken silently (Kafka closes instead)
                data += frame(header(18, 0, cid ^ 1))
            return Case(f"{kind}:{name}", data, cid, 0, version, expect)
        if kind == "huge_array":
            key, version = r.choice(
                [(3, r.randint(1, 8)), (0, r.randint(3, 8)), (2, r.randint(1, 5))]
            )
            count = r.choice([(1 << 31) - 1, 1 << 30, 10_000_000, -2, -(1 << 31)])
            if key == 3:
                payload = _i32(count) + _str(self.topic)
            elif key == 0:
                payload = _str(None) + _i16(1) + _i32(1000) + _i32(count) + _str(self.topic)
            else:
                payload = _i32(-1) + (_i8(0) if version >= 2 else b"") + _i32(count)
            return Case(
                kind, frame(header(key, version, cid) + payload), cid, key, version, EXPECT_EITHER
            )
        if kind == "lying_string":
            key, version = self._served()
            where = r.choice(["client_id", "topic"])
            lie = r.choice([32767, 1000, -2, -32768, 50])
            if where == "client_id" or key in (3, 18, 10, 22):
                raw = b"fuzz"
                payload = _i16(key) + _i16(version) + _i32(cid) + _i16(lie) + raw
                if key == 18 and version >= 3:
                    payload += b"\x00"
                payload += body(key, version, self.topic, self.partition, self.batch)
            else:
                valid = body(key, version, self.topic, self.partition, self.batch)
                encoded = _str(self.topic)
                at = valid.find(encoded)
                payload = header(key, version, cid) + valid[:at] + _i16(lie) + valid[at + 2 :]
            return Case(f"{kind}:{where}", frame(payload), cid, key, version, EXPECT_EITHER)
        # sasl_out_of_order
        key, version = r.choice([(17, 1), (36, 0), (36, 1), (17, 0)])
        payload = header(key, version, cid) + body(key, version, self.topic, self.partition)
        expect = EXPECT_CLOSE if (key, version) == (17, 0) else EXPECT_ERROR_THEN_CLOSE
        return Case(kind, frame(payload), cid, key, version, expect)


def self_check(topic: str = "fuzz", partition: int = 0) -> None:
    """Every valid request the generator builds reads back whole with kio's request reader."""
    batch = build_batch([Record(None, b"x" * 100)])
    for key, (_, low, high, _) in SERVED.items():
        for version in range(low, VALID_MAX.get(key, high) + 1):
            payload = header(key, version, 7) + body(key, version, topic, partition, batch)
            cls = request_class(key, version)
            head = read_header(payload, bool(cls.__flexible__))
            assert head.correlation_id == 7, (key, version)
            decode_body(cls, payload, head.body_offset)


# -- checking a response ------------------------------------------------------------------------
_readers: dict[tuple[int, int], Callable[..., Any]] = {}


def _response_reader(key: int, version: int) -> Callable[..., Any]:
    reader = _readers.get((key, version))
    if reader is None:
        reader = _readers[(key, version)] = entity_reader(response_class(key, version))
    return reader


def decode_response(key: int, version: int, payload: bytes) -> tuple[int, Any]:
    """(correlation id, kio response) of a response frame's payload; raises on anything
    malformed. ApiVersions' header is always v0; the door serves no other flexible version."""
    (cid,) = struct.unpack_from(">i", payload, 0)
    offset = 4
    cls = response_class(key, version)
    if cls.__flexible__ and key != 18:
        offset += 1  # tagged fields (none)
    value, size = _response_reader(key, version)(payload, offset)
    if offset + size != len(payload):
        raise ValueError(f"{len(payload) - offset - size} bytes after the response")
    return cid, value


def _error_codes(value: Any) -> list[int]:
    """Every ``error_code`` in a kio response, depth first."""
    return [int(v) for v in _fields_named(value, "error_code")]


def error_messages(value: Any) -> list[str]:
    """Every non-empty ``error_message`` in a kio response."""
    return [str(v) for v in _fields_named(value, "error_message") if v]


# what Python's own exceptions say: a response carrying one leaked server internals
PYTHON_MARKERS = (
    "Traceback",
    'File "',
    "object has no attribute",
    "NoneType",
    "unpack requires",
    "index out of range",
    "invalid literal for int",
    "KeyError",
    "struct.error",
    "unexpected keyword",
    "not subscriptable",
    "positional argument",
)


def _fields_named(value: Any, wanted: str) -> list[Any]:
    out: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple | list):
            stack.extend(v)
            continue
        fields = getattr(v, "__dataclass_fields__", None)
        if fields is None:
            continue
        for name in fields:
            if name.startswith("__"):
                continue
            item = getattr(v, name)
            if name == wanted:
                out.append(item)
            elif isinstance(item, tuple | list) or hasattr(item, "__dataclass_fields__"):
                stack.append(item)
    return out


def classify(case: Case, payload: bytes | None) -> tuple[str, str]:
    """(outcome, detail) of one case given the first response payload (``None``: closed)."""
    if payload is None:
        if case.expect in (EXPECT_EITHER, EXPECT_CLOSE):
            return CLOSED, ""
        return CLOSED_NOT_ANSWER, "closed where Kafka answers with an error code"
    if b"Traceback" in payload or b'File "' in payload:
        return PYTHON_TEXT, payload[:200].hex()
    if case.expect == EXPECT_CLOSE:
        if case.kind.startswith("corrupt_batch_acks0"):
            return CORRUPT_ACCEPTED, "acks=0: no close, the next request answered"
        return ANSWER_NOT_CLOSE, payload[:64].hex()
    version = 0 if case.expect == EXPECT_UNSUPPORTED else case.api_version
    try:
        cid, value = decode_response(case.api_key, version, payload)
    except Exception as e:
        return MALFORMED, f"{type(e).__name__}: {e}"[:200]
    if cid != case.correlation_id:
        return MALFORMED, f"correlation id {cid}, sent {case.correlation_id}"
    codes = _error_codes(value)
    for message in error_messages(value):
        if any(marker in message for marker in PYTHON_MARKERS):
            return PYTHON_TEXT, message[:200]
    if case.expect == EXPECT_PRODUCE_ERROR:
        if not codes or any(c not in CORRUPT_BATCH_CODES for c in codes):
            return CORRUPT_ACCEPTED, f"error codes {codes}"
        return REFUSED, ""
    if case.expect == EXPECT_UNSUPPORTED:
        if codes[:1] != [UNSUPPORTED_VERSION]:
            return MALFORMED, f"ApiVersions error codes {codes}"
        return REFUSED, ""
    if case.expect == EXPECT_ERROR_THEN_CLOSE:
        if not codes or codes[0] == 0:
            return MALFORMED, f"SASL out of order answered {codes}"
        return REFUSED, ""
    return (REFUSED if any(codes) else ANSWERED), ""


# -- running ------------------------------------------------------------------------------------
@dataclass
class FuzzReport:
    seed: int
    frames: int = 0
    seconds: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    findings: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.seconds if self.seconds else 0.0

    def finding_count(self) -> int:
        return sum(n for k, n in self.outcomes.items() if k.startswith("finding_"))

    def summary(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "frames": self.frames,
            "seconds": round(self.seconds, 2),
            "frames_per_s": round(self.frames_per_s),
            "outcomes": dict(sorted(self.outcomes.items())),
            "findings": self.finding_count(),
        }


async def _read_payload(reader: asyncio.StreamReader, deadline_s: float) -> bytes | None:
    """The next response payload, or ``None`` when the server closed; TimeoutError if neither."""
    async with asyncio.timeout(deadline_s):
        try:
            prefix = await reader.readexactly(4)
        except asyncio.IncompleteReadError as e:
            if e.partial:
                raise ValueError(f"{len(e.partial)} bytes then close") from None
            return None
        except ConnectionError:
            return None
        (size,) = struct.unpack(">i", prefix)
        if size < 4 or size > 64 * 1024 * 1024:
            raise ValueError(f"a response size prefix of {size}")
        return await reader.readexactly(size)


async def _worker(
    host: str,
    port: int,
    gen: Generator,
    frames: int,
    deadline_s: float,
    report: FuzzReport,
    worker: int,
    seed: int,
    watch: LogWatch | None,
) -> None:
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def close() -> None:
        nonlocal conn
        if conn is not None:
            conn[1].close()
            try:
                await conn[1].wait_closed()
            except (ConnectionError, OSError):
                pass
        conn = None

    for index in range(frames):
        case = gen.next()
        report.kinds[case.kind.split(":")[0]] += 1
        if conn is not None and case.half_close:
            await close()
        if conn is None:
            conn = await asyncio.open_connection(host, port)
        reader, writer = conn
        outcome, detail = CLOSED, ""
        try:
            writer.write(case.data)
            await writer.drain()
            if case.half_close:
                writer.write_eof()
        except (ConnectionError, OSError):
            pass  # the server closed first (e.g. an oversized prefix): read what it said
        try:
            payload = await _read_payload(reader, deadline_s)
            outcome, detail = classify(case, payload)
            if payload is None:
                await close()
            elif case.expect == EXPECT_ERROR_THEN_CLOSE or case.half_close:
                # the server must close after this answer
                if await _read_payload(reader, deadline_s) is not None:
                    outcome, detail = OPEN_AFTER, "answered again instead of closing"
                await close()
            elif outcome.startswith("finding_"):
                await close()
        except TimeoutError:
            outcome, detail = HANG, f"nothing within {deadline_s} s"
            await close()
        except (ValueError, asyncio.IncompleteReadError) as e:
            outcome, detail = MALFORMED, str(e)[:200]
            await close()
        if watch is not None and outcome == CLOSED:
            # the door logs an unexpected handler failure, then closes: the frame just closed
            # is (with concurrent workers, most likely) the one that caused it
            line = watch.traceback_of(case)
            if line is not None:
                outcome, detail = TRACEBACK, line[:400]
        report.outcomes[outcome] += 1
        report.frames += 1
        if outcome.startswith("finding_"):
            report.findings.append(
                {
                    "outcome": outcome,
                    "kind": case.kind,
                    "detail": detail,
                    "seed": seed,
                    "worker": worker,
                    "index": index,
                    "frame_hex": case.data[:4096].hex(),
                }
            )
    await close()


class LogWatch:
    """The traceback lines a node's log file gained since the last look."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

        self.pending: list[str] = []
        """traceback lines not yet matched to a frame"""

    def traceback_of(self, case: Case) -> str | None:
        """A new traceback line naming ``case``'s API and version (the door logs
        ``"<API> v<version> from <host> failed"``), taken off the pending ones."""
        with self.path.open("rb") as f:
            f.seek(self.offset)
            text = f.read()
        cut = text.rfind(b"\n") + 1
        self.offset += cut
        self.pending += log_tracebacks(text[:cut].decode(errors="replace"))
        name = SERVED.get(case.api_key, ("?",))[0]
        for line in self.pending:
            if f"{name} v{case.api_version} " in line:
                self.pending.remove(line)
                return line
        return None


def worker_seed(seed: int, worker: int) -> int:
    return seed * 1000 + worker


async def _run(
    host: str,
    port: int,
    topic: str,
    partition: int,
    frames: int,
    seed: int,
    workers: int,
    deadline_s: float,
    report: FuzzReport,
    watch: LogWatch | None,
) -> None:
    share = [frames // workers + (1 if i < frames % workers else 0) for i in range(workers)]
    await asyncio.gather(
        *(
            _worker(
                host,
                port,
                Generator(worker_seed(seed, i), topic, partition),
                share[i],
                deadline_s,
                report,
                i,
                seed,
                watch,
            )
            for i in range(workers)
        )
    )


def run_fuzz(
    address: str,
    topic: str,
    partition: int,
    frames: int,
    seed: int,
    workers: int = 4,
    deadline_s: float = 10.0,
    log_path: Path | None = None,
) -> FuzzReport:
    """Drives ``frames`` fuzzed frames at the Kafka listener ``address`` from ``workers``
    connections at a time (worker ``i`` draws from ``Generator(seed * 1000 + i)``). With the
    node's ``log_path``, a frame closed right after the log gained a traceback is a finding."""
    host, port = address.rsplit(":", 1)
    report = FuzzReport(seed)
    start = time.perf_counter()
    watch = LogWatch(log_path) if log_path is not None else None
    asyncio.run(
        _run(host, int(port), topic, partition, frames, seed, workers, deadline_s, report, watch)
    )
    report.seconds = time.perf_counter() - start
    if watch is not None:
        watch.traceback_of(Case("", b"", 0, -1, -1, ""))  # the last lines
        for line in watch.pending:
            report.outcomes[TRACEBACK] += 1
            report.findings.append({"outcome": TRACEBACK, "kind": "unattributed", "detail": line})
    return report


def replay(address: str, data: bytes, deadline_s: float = 10.0) -> list[bytes | None]:
    """Sends ``data`` on a fresh connection (half-closed after) and returns what came back:
    response payloads, then ``None`` for the close. A reproducer for a finding."""
    import socket

    host, port = address.rsplit(":", 1)
    out: list[bytes | None] = []
    with socket.create_connection((host, int(port)), timeout=deadline_s) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    while len(buf) >= 4:
        (size,) = struct.unpack_from(">i", buf, 0)
        out.append(buf[4 : 4 + size])
        buf = buf[4 + size :]
    out.append(None)
    return out


# -- the node, before and after -----------------------------------------------------------------
def _roundtrip(address: str, key: int, version: int, payload_body: bytes) -> Any:
    import socket

    host, port = address.rsplit(":", 1)
    cid = random.randrange(1 << 30)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(frame(header(key, version, cid) + payload_body))
        f = s.makefile("rb")
        (size,) = struct.unpack(">i", f.read(4))
        got, value = decode_response(key, version, f.read(size))
    if got != cid:
        raise AssertionError(f"correlation id {got}, sent {cid}")
    return value


def advertised_keys(address: str) -> set[int]:
    """The API keys the door at ``address`` advertises (ApiVersions v3)."""
    versions = _roundtrip(address, 18, 3, body(18, 3, "", 0))
    return {int(k.api_key) for k in versions.api_keys}


def probe(address: str) -> tuple[int, int]:
    """ApiVersions v3 and Metadata v1 on a fresh connection: (APIs advertised, brokers)."""
    versions = _roundtrip(address, 18, 3, body(18, 3, "", 0))
    if int(versions.error_code) != 0:
        raise AssertionError(f"ApiVersions answered {versions.error_code}")
    metadata = _roundtrip(address, 3, 1, body(3, 1, "", 0))
    return len(versions.api_keys), len(metadata.brokers)


def leader_partition(address: str, topic: str, timeout_s: float = 60) -> int:
    """A partition of ``topic`` the node at ``address`` leads (Metadata v1 through its door)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        md = _roundtrip(address, 3, 1, _array([_str(topic)]))
        me = {int(b.node_id) for b in md.brokers if f"{b.host}:{b.port}" == address}
        for t in md.topics:
            for p in t.partitions:
                if int(p.leader_id) in me and int(p.error_code) == 0:
                    return int(p.partition_index)
        time.sleep(0.2)
    raise TimeoutError(f"{address} leads no partition of {topic}")


class WellBehaved:
    """A well-behaved confluent-kafka producer (idempotent, acks=all) sending numbered values to
    ``topic``, and a confluent-kafka consumer reading it from the start, each in a thread while
    the fuzzer runs. :meth:`finish` stops the producer, lets the consumer catch up, and returns
    (acknowledged, acknowledged but never read)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, per_tick: int = 10) -> None:
        self.per_tick = per_tick
        """records sent every 50 ms (a steady trickle, not a load)"""
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.acked: dict[bytes, tuple[int, int]] = {}
        """value -> (partition, offset) of every acknowledged record"""
        self.seen: set[bytes] = set()
        self.missing: list[tuple[int, int]] = []
        """(partition, offset) of the acknowledged records the consumer never read"""
        self.watermarks: dict[int, tuple[int, int]] = {}
        self.errors: list[str] = []
        """delivery failures and consumer errors"""
        self._stop = threading.Event()
        self._drain_until: float | None = None
        self._producer = threading.Thread(target=self._produce, daemon=True)
        self._consumer = threading.Thread(target=self._consume, daemon=True)

    def start(self) -> None:
        self._producer.start()
        self._consumer.start()

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )

        def report(err: Any, msg: Any) -> None:
            if err is None:
                self.acked[msg.value()] = (msg.partition(), msg.offset())
            else:
                self.errors.append(f"delivery: {err}")

        n = 0
        while not self._stop.wait(0.05):
            for _ in range(self.per_tick):
                producer.produce(self.topic, f"well-behaved-{n}".encode(), on_delivery=report)
                n += 1
            producer.poll(0)
        if producer.flush(60):
            self.errors.append("delivery: records left unflushed after 60 s")

    def _consume(self) -> None:
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"fuzz-check-{random.randrange(1 << 30)}",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
        try:
            while True:
                msg = consumer.poll(0.2)
                if msg is not None:
                    error = msg.error()
                    if error is not None:
                        if error.code() != KafkaError._PARTITION_EOF:
                            self.errors.append(f"consumer: {error}")
                        continue
                    value = msg.value()
                    if value is not None:
                        self.seen.add(value)
                    continue
                drain_until = self._drain_until
                if drain_until is not None and (
                    time.monotonic() > drain_until or self.acked.keys() <= self.seen
                ):
                    break
            for p in range(self.partitions):
                self.watermarks[p] = consumer.get_watermark_offsets(
                    TopicPartition(self.topic, p), timeout=10
                )
        finally:
            consumer.close()

    def finish(self, timeout_s: float = 60) -> tuple[int, int]:
        self._stop.set()
        self._producer.join(timeout_s + 60)
        self._drain_until = time.monotonic() + timeout_s
        self._consumer.join(timeout_s + 30)
        self.missing = sorted(v for k, v in self.acked.items() if k not in self.seen)
        return len(self.acked), len(self.missing)


def log_tracebacks(text: str) -> list[str]:
    """The log lines that start a traceback, with the line before each (what failed) and the
    traceback's last line (the exception)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if "Traceback" not in line:
            continue
        end = i + 1
        while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
            end += 1
        raised = lines[end] if end < len(lines) else ""
        out.append(f"{lines[i - 1] if i else ''} | {line} | {raised}")
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_fuzz")
    parser.add_argument("--bootstrap", required=True, help="one node's Kafka listener")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    print(f"fuzz seed {seed}", flush=True)
    self_check()
    partition = leader_partition(args.bootstrap, args.topic)
    report = run_fuzz(args.bootstrap, args.topic, partition, args.frames, seed, args.workers)
    for f in report.findings[:20]:
        print(json.dumps(f))
    out = report.summary()
    print(json.dumps(out, sort_keys=True))
    return out


if __name__ == "__main__":
    main()
