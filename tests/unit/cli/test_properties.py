"""Kafka's console-tool properties, the client-property mapping, and kcat's -f and -J."""

from __future__ import annotations

import json
import struct

import pytest

from odradek.cli.properties import (
    CONSUMER_PROPERTIES,
    PRODUCER_PROPERTIES,
    LineReader,
    MessageFormatter,
    check_kcat_format,
    client_kwargs,
    kcat_format,
    kcat_json,
)
from odradek.client.types import ConsumerRecord
from odradek.records import TimestampType


def record(key=b"k", value=b"v", headers=(), ts_type=TimestampType.CREATE_TIME):
    return ConsumerRecord("t", 2, 7, 1700, ts_type, key, value, tuple(headers), 0)


def test_producer_properties_map_to_producer_keywords():
    kwargs = client_kwargs(
        [
            ("acks", "all"),
            ("delivery.timeout.ms", "3000"),
            ("compression.type", "GZIP"),
            ("max.in.flight.requests.per.connection", "5"),
        ],
        PRODUCER_PROPERTIES,
        "producer",
    )
    assert kwargs == {
        "acks": -1,
        "delivery_timeout_ms": 3000,
        "compression": "gzip",
        "max_in_flight_per_partition": 5,
    }


@pytest.mark.parametrize(
    ("pairs", "words"),
    [
        ([("enable.idempotence", "true")], "unknown producer property 'enable.idempotence'"),
        ([("linger.ms", "soon")], "linger.ms: not an integer"),
        ([("acks", "2")], "acks: expected all, -1, 0 or 1"),
    ],
)
def test_bad_producer_properties_are_one_line_errors(pairs, words):
    with pytest.raises(ValueError) as e:
        client_kwargs(pairs, PRODUCER_PROPERTIES, "producer")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_consumer_properties_map_to_consumer_keywords():
    kwargs = client_kwargs(
        [("fetch.max.bytes", "1024"), ("check.crcs", "false")], CONSUMER_PROPERTIES, "consumer"
    )
    assert kwargs == {"fetch_max_bytes": 1024, "check_crcs": False}
    with pytest.raises(ValueError, match=r"unknown consumer property 'group\.id'"):
        client_kwargs([("group.id", "g")], CONSUMER_PROPERTIES, "consumer")


def test_line_reader_reads_headers_key_and_value_as_kafka():
    reader = LineReader.from_properties(
        [("parse.key", "true"), ("parse.headers", "true"), ("null.marker", "NULL")]
    )
    parsed = reader.parse(b"h1:a,h2,h3:NULL\tkey\tva\tlue", 1)
    assert parsed.headers == (("h1", b"a"), ("h2", None), ("h3", None))
    assert (parsed.key, parsed.value) == (b"key", b"va\tlue")
    assert reader.parse(b"h:1\tNULL\tNULL", 2).key is None
    with pytest.raises(ValueError, match="line 3 has no key separator"):
        reader.parse(b"h:1\tno-key", 3)
    with pytest.raises(ValueError, match="line 4 has no headers delimiter"):
        reader.parse(b"nothing", 4)


def test_line_reader_custom_separators_and_ignore_error():
    reader = LineReader.from_properties(
        [
            ("parse.key", "true"),
            ("key.separator", "::"),
            ("parse.headers", "true"),
            ("headers.delimiter", "|"),
            ("headers.separator", ";"),
            ("headers.key.separator", "="),
            ("ignore.error", "true"),
        ]
    )
    parsed = reader.parse(b"a=1;b=2|k::v", 1)
    assert parsed == type(parsed)(b"k", b"v", (("a", b"1"), ("b", b"2")))
    lenient = reader.parse(b"just a value", 2)
    assert (lenient.key, lenient.value, lenient.headers) == (None, b"just a value", ())


@pytest.mark.parametrize(
    ("pairs", "words"),
    [
        ([("parse.keys", "true")], "unknown produce --property 'parse.keys'"),
        ([("parse.key", "yes")], "parse.key: expected true or false"),
        ([("key.separator", "")], "key.separator must not be empty"),
    ],
)
def test_line_reader_bad_properties(pairs, words):
    with pytest.raises(ValueError) as e:
        LineReader.from_properties(pairs)
    assert words in str(e.value)


def test_message_formatter_prints_fields_in_kafkas_order():
    formatter = MessageFormatter.from_properties(
        [
            ("print.timestamp", "true"),
            ("print.partition", "true"),
            ("print.offset", "true"),
            ("print.headers", "true"),
            ("print.key", "true"),
            ("key.separator", " | "),
            ("line.separator", ";\n"),
        ]
    )
    r = record(headers=[("a", b"1"), ("b", None)])
    assert formatter.format(r) == "CreateTime:1700 | Partition:2 | Offset:7 | a:1,b:null | k | v;\n"
    assert formatter.format(record(headers=[])).count("NO_HEADERS") == 1
    nulls = MessageFormatter.from_properties(
        [("print.key", "true"), ("null.literal", "<none>"), ("print.value", "false")]
    )
    assert nulls.format(record(key=None)) == "<none>\n"
    log_append = MessageFormatter(print_timestamp=True, line_separator="")
    assert log_append.format(record(ts_type=TimestampType.LOG_APPEND_TIME)) == (
        "LogAppendTime:1700\tv"
    )
    with pytest.raises(ValueError, match=r"unknown consume --property 'print\.keys'"):
        MessageFormatter.from_properties([("print.keys", "true")])


def test_message_formatter_flags_turn_fields_on():
    formatter = MessageFormatter.from_properties([], print_key=True)
    assert formatter.format(record()) == "k\tv\n"


def test_kcat_format_tokens_and_escapes():
    r = record(headers=[("a", b"1"), ("b", b"2")])
    fmt = r"%t [%p] @%o: %k=%s (%K/%S) ts=%T h=%h 100%%\t\x41\n"
    assert kcat_format(fmt, r) == b"t [2] @7: k=v (1/1) ts=1700 h=a=1,b=2 100%\tA\n"
    nulls = record(key=None, value=None)
    assert kcat_format("%k|%s|%K|%S", nulls) == b"||-1|-1"
    assert kcat_format("%R%s", record(value=b"abc")) == struct.pack(">i", 3) + b"abc"
    assert kcat_format("%R", nulls) == struct.pack(">i", -1)


@pytest.mark.parametrize("fmt", ["%x", "50%", "%s %q"])
def test_kcat_format_refuses_unknown_tokens(fmt):
    with pytest.raises(ValueError, match="unknown format token"):
        check_kcat_format(fmt)


def test_kcat_json_envelope():
    line = kcat_json(record(headers=[("a", b"1"), ("n", None)], value=b"\xff"))
    assert "\n" not in line
    assert json.loads(line) == {
        "topic": "t",
        "partition": 2,
        "offset": 7,
        "tstype": "create",
        "ts": 1700,
        "broker": -1,
        "headers": ["a", "1", "n", None],
        "key": "k",
        "payload": "\\xff",
    }
    bare = json.loads(kcat_json(record(key=None, headers=[])))
    assert "headers" not in bare and bare["key"] is None
