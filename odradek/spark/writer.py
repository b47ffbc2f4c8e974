"""Batch and streaming writes: rows to records through the SDK's :class:`~odradek.Producer`.

Columns as Spark's Kafka sink reads them: ``value`` (binary or string, required), ``key``
(binary or string), ``topic`` (string; the ``topic`` option overrides it), ``partition`` (int;
default: the producer's partitioner), ``headers`` (``array<struct<key: string, value:
binary>>``). The schema is checked when the writer is made, so a wrong column fails before a
task runs, with :class:`~odradek.spark.options.OdradekSparkOptionError`.

Each task makes its own producer (``acks=-1`` unless ``kafka.acks`` says otherwise), sends its
rows, flushes, and checks every send's future: a record that was not acknowledged raises, so
the task — and the write — fails (Spark's Kafka sink does the same with its producer
callback). Delivery is at least once: a retried task sends its rows again.

Rows arrive as Arrow batches (``DataSourceArrowWriter``), converted column by column.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from odradek.client.futures import FutureRecordMetadata
from odradek.producer import Producer, SendManyFuture
from odradek.spark.options import OdradekSparkOptionError, WriteOptions, parse_write_options

__all__ = ["OdradekBatchWriter", "OdradekStreamWriter", "WriteCommit", "write_rows"]

log = logging.getLogger("odradek.spark")

_CHECK_EVERY = 50_000
"""Check the futures sent so far every this many records, so a task does not hold millions."""


@dataclass(frozen=True)
class WriteCommit(WriterCommitMessage):
    """What one task wrote."""

    records: int


def check_schema(schema: StructType, opts: WriteOptions) -> None:
    """Raise :class:`OdradekSparkOptionError` if ``schema`` cannot be written (Spark's
    ``KafkaWriter.validateQuery`` rules)."""
    fields = {f.name: f.dataType for f in schema.fields}

    def expect(name: str, allowed: tuple[type, ...], what: str) -> None:
        if name in fields and not isinstance(fields[name], allowed):
            raise OdradekSparkOptionError(
                name,
                f"the {name} column must be of type {what}, not {fields[name].simpleString()}",
            )

    if "value" not in fields:
        raise OdradekSparkOptionError("value", "a 'value' column (binary or string) is required")
    expect("value", (BinaryType, StringType), "binary or string")
    expect("key", (BinaryType, StringType), "binary or string")
    expect("topic", (StringType,), "string")
    expect("partition", (IntegerType,), "int")
    if "headers" in fields:
        headers = fields["headers"]
        element = headers.elementType if isinstance(headers, ArrayType) else None
        ok = isinstance(element, StructType) and [
            (f.name, type(f.dataType)) for f in element.fields
        ] == [("key", StringType), ("value", BinaryType)]
        if not ok:
            raise OdradekSparkOptionError(
                "headers",
                "the headers column must be of type array<struct<key: string, value: binary>>, "
                f"not {headers.simpleString()}",
            )
    if opts.topic is None and "topic" not in fields:
        raise OdradekSparkOptionError(
            "topic", "no topic to write to: set the 'topic' option or add a 'topic' column"
        )


def _as_bytes(value: bytes | str | None) -> bytes | None:
    return value.encode("utf-8") if isinstance(value, str) else value


def write_rows(opts: WriteOptions, batches: Iterator[Any]) -> WriteCommit:
    """Send every row of the Arrow ``batches``; raise if any record is not acknowledged."""
    sent = 0
    with Producer(
        opts.bootstrap_servers,
        **opts.security.options(),
        acks=opts.acks,
        linger_ms=opts.linger_ms,
        batch_size=opts.batch_size,
        compression=opts.compression,
    ) as producer:
        pending: list[FutureRecordMetadata | SendManyFuture] = []
        for batch in batches:
            names = batch.schema.names
            n = batch.num_rows
            column = {name: batch.column(name).to_pylist() for name in names}
            values = column["value"]
            keys = column.get("key") or [None] * n
            topics = [opts.topic] * n if opts.topic is not None else column["topic"]
            parts = column.get("partition") or [None] * n
            headers = column.get("headers") or [None] * n
            if (
                opts.topic is not None
                and not any(p is not None for p in parts)
                and not any(headers)
            ):
                # The bulk path: one topic, no partitions or headers given: the whole Arrow
                # batch in one send_many call.
                pending.append(
                    producer.send_many(
                        opts.topic,
                        [_as_bytes(v) for v in values],
                        [_as_bytes(k) for k in keys] if any(k is not None for k in keys) else None,
                    )
                )
                sent += n
                continue
            send = producer.send
            for i in range(n):
                topic = topics[i]
                if topic is None:
                    raise OdradekSparkOptionError(
                        "topic", "a row has a null topic and no 'topic' option is set"
                    )
                row_headers = headers[i]
                pending.append(
                    send(
                        topic,
                        _as_bytes(values[i]),
                        key=_as_bytes(keys[i]),
                        headers=[(h["key"], h["value"]) for h in row_headers]
                        if row_headers
                        else (),
                        partition=parts[i],
                    )
                )
            sent += n
            if len(pending) >= _CHECK_EVERY:
                _settle(producer, pending)
                pending = []
        _settle(producer, pending)
    return WriteCommit(sent)


def _settle(producer: Producer, pending: list[FutureRecordMetadata | SendManyFuture]) -> None:
    producer.flush()
    failed = [f for f in pending if f.exception() is not None]
    if failed:
        total = sum(f.count if isinstance(f, SendManyFuture) else 1 for f in pending)
        lost = sum(f.count if isinstance(f, SendManyFuture) else 1 for f in failed)
        first = failed[0].exception()
        raise RuntimeError(
            f"{lost} of {total} record(s) were not acknowledged; the first error: {first!r}"
        ) from first


class OdradekBatchWriter(DataSourceArrowWriter):
    """``df.write.format("odradek")``: each task sends its rows (see the module docstring)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.opts = parse_write_options(options)
        check_schema(schema, self.opts)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return write_rows(self.opts, iterator)


class OdradekStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("odradek")``: each micro-batch's tasks send their rows."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.opts = parse_write_options(options)
        check_schema(schema, self.opts)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return write_rows(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to do: every record was acknowledged before its task succeeded."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to undo: records already acknowledged stay (at-least-once, as Kafka's
        sink)."""
