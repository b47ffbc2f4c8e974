"""The ``odradek`` data source: batch and streaming reads with Spark's Kafka source semantics.

Planning (``partitions()``, ``latestOffset()``) runs in the driver's Python process and asks
the cluster with the SDK: ``Metadata`` for the partitions of the subscribed topics and
``ListOffsets`` (through :class:`~odradek.Consumer`) for earliest, latest and by-timestamp
offsets. Each Spark partition carries a :class:`~odradek.spark.reader.RangeRead` (values only:
it is pickled to an executor), and ``read()`` turns it into Arrow batches with
:func:`~odradek.spark.reader.read_range`.

Streaming offsets are Spark's Kafka JSON, ``{"topic": {"0": 42}}``: the next offset to read per
partition, stored verbatim in the query's checkpoint, so a restarted query resumes exactly
where the last committed micro-batch ended. ``maxOffsetsPerTrigger`` becomes the default read
limit (``ReadMaxRows``), honoured by ``trigger(availableNow=True)`` through
``SupportsTriggerAvailableNow``. Partitions that appear in a subscribed topic are read from
their earliest offset.

With ``kafka.isolation.level=read_committed`` the planner's "latest" is the last stable
offset (the first offset of the oldest open transaction, else the high watermark), and the
tasks fetch read_committed and drop aborted transactions' records and markers: a read never
returns a record of an aborted or still open transaction.

Option errors (:class:`~odradek.spark.options.OdradekSparkOptionError`) are raised from
``schema()`` and the readers' constructors, so they surface at ``load()``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from odradek.admin import Admin
from odradek.client.metadata import ClusterMetadata
from odradek.client.security import SecurityConfig
from odradek.client.types import TopicPartition
from odradek.clock import SystemClock
from odradek.consumer import Consumer, IsolationLevel
from odradek.errors import OdradekError, UnknownTopicOrPartitionError
from odradek.spark.arrow import spark_ddl
from odradek.spark.options import (
    EARLIEST,
    LATEST,
    OdradekSparkOptionError,
    OffsetSpec,
    ReadOptions,
    Subscription,
    parse_read_options,
)
from odradek.spark.per_process import PerProcess
from odradek.spark.planning import (
    OffsetRange,
    delay_batch,
    offsets_from_json,
    offsets_to_json,
    rate_limit,
    split_ranges,
)
from odradek.spark.reader import RangeRead, read_range
from odradek.spark.writer import OdradekBatchWriter, OdradekStreamWriter

__all__ = ["OdradekDataSource", "Planner", "RangePartition"]

log = logging.getLogger("odradek.spark")


class RangePartition(InputPartition):
    """One Spark partition: a :class:`RangeRead` (its ``value``)."""

    def __init__(self, spec: RangeRead) -> None:
        super().__init__(spec)
        self.spec = spec


class Planner:
    """The driver's questions to the cluster: which partitions, which offsets. Not
    thread-safe (one per process, used by one planning thread at a time)."""

    def __init__(
        self,
        servers: str,
        security: SecurityConfig | None = None,
        isolation_level: IsolationLevel = "read_uncommitted",
    ) -> None:
        self.servers = servers
        options = (security or SecurityConfig()).options()
        self.admin = Admin(servers, **options)
        # read_committed: "latest" is each partition's last stable offset (ListOffsets with
        # isolation_level 1), so no planned range reaches into an open transaction
        self.consumer = Consumer(servers, isolation_level=isolation_level, **options)
        self.cluster = ClusterMetadata()

    def topic_partitions(self, subscription: Subscription) -> list[TopicPartition]:
        """The partitions ``subscription`` reads now, sorted, from one metadata request
        (kept for :meth:`leader_hint`). Raises :class:`OdradekSparkOptionError` naming the
        option for a topic (or, with ``assign``, a partition) that does not exist."""
        cluster = self.admin.cluster_metadata()
        self.cluster = cluster
        if subscription.kind == "subscribePattern":
            topics = sorted(t for t in cluster.topics if subscription.matches(t))
        elif subscription.kind == "subscribe":
            topics = list(subscription.topics)
        else:
            topics = sorted({tp.topic for tp in subscription.partitions})
        existing: list[TopicPartition] = []
        for topic in topics:
            meta = cluster.topics.get(topic)
            if meta is None or meta.error_code == UnknownTopicOrPartitionError.code:
                raise OdradekSparkOptionError(
                    subscription.kind,
                    f"topic {topic!r} named by option '{subscription.kind}' does not exist",
                )
            existing.extend(TopicPartition(topic, p.partition) for p in meta.partitions)
        if subscription.kind != "assign":
            return sorted(existing)
        known = set(existing)
        for tp in subscription.partitions:
            if tp not in known:
                raise OdradekSparkOptionError(
                    "assign", f"partition {tp} named by option 'assign' does not exist"
                )
        return sorted(subscription.partitions)

    def leader_hint(self, tp: TopicPartition) -> str | None:
        """The address of ``tp``'s leader at the last :meth:`topic_partitions`, if known."""
        return self.cluster.leader_address(tp)

    def earliest(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self.consumer.beginning_offsets(tps) if tps else {}

    def latest(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self.consumer.end_offsets(tps) if tps else {}

    def resolve(
        self, spec: OffsetSpec, tps: Sequence[TopicPartition], strategy: str = "error"
    ) -> dict[TopicPartition, int]:
        """The offset ``spec`` means for each of ``tps``. For timestamps with no record at or
        after them: the latest offset for ending options or with ``strategy`` "latest", else
        :class:`OdradekSparkOptionError` (Spark's ``startingOffsetsByTimestampStrategy``)."""
        named = set(spec.offsets) | set(spec.timestamps)
        absent = sorted(named - set(tps))
        if absent:
            # Spark's Kafka source fails too ("you must specify all TopicPartitions"): a read
            # silently narrower than the JSON says would hide a typo or a shrunk topic
            raise OdradekSparkOptionError(
                spec.option,
                f"option '{spec.option}' names {', '.join(map(str, absent))}, which the topic "
                "does not have; it must name exactly the partitions read",
            )
        if not tps:
            return {}
        if spec.kind == "earliest":
            return self.earliest(tps)
        if spec.kind == "latest":
            return self.latest(tps)
        if spec.kind == "offsets":
            wanted = dict(spec.offsets)
            missing = [str(tp) for tp in tps if tp not in wanted]
            if missing:
                raise OdradekSparkOptionError(
                    spec.option,
                    f"option '{spec.option}' gives specific offsets, so it must name every "
                    f"partition read; missing: {', '.join(missing)}",
                )
            out = {tp: wanted[tp] for tp in tps}
            earliest = self.earliest([tp for tp, o in out.items() if o == EARLIEST])
            latest = self.latest([tp for tp, o in out.items() if o == LATEST])
            out.update(earliest)
            out.update(latest)
            return out
        if spec.kind == "timestamp":
            timestamps = dict.fromkeys(tps, spec.timestamp)
        else:
            timestamps = dict(spec.timestamps)
            missing = [str(tp) for tp in tps if tp not in timestamps]
            if missing:
                raise OdradekSparkOptionError(
                    spec.option,
                    f"option '{spec.option}' must name every partition read; missing: "
                    f"{', '.join(missing)}",
                )
            timestamps = {tp: timestamps[tp] for tp in tps}
        found = self.consumer.offsets_for_times(timestamps)
        none = [tp for tp, f in found.items() if f is None]
        if none and spec.option.startswith("starting") and strategy == "error":
            raise OdradekSparkOptionError(
                spec.option,
                f"option '{spec.option}': no record at or after the timestamp in "
                f"{', '.join(map(str, none))} (set startingOffsetsByTimestampStrategy to "
                "'latest' to start at the end instead)",
            )
        out = {tp: f.offset for tp, f in found.items() if f is not None}
        out.update(self.latest(none))
        return out


_planners: PerProcess[tuple[str, SecurityConfig, IsolationLevel], Planner] = PerProcess(
    lambda key: Planner(*key)
)


def planner(
    servers: str,
    security: SecurityConfig | None = None,
    isolation_level: IsolationLevel = "read_uncommitted",
) -> Planner:
    """This process's :class:`Planner` for ``servers`` at ``isolation_level`` (made on first
    use)."""
    return _planners.get((servers, security or SecurityConfig(), isolation_level))


def _range_read(opts: ReadOptions, r: OffsetRange, leader: str | None) -> RangePartition:
    return RangePartition(
        RangeRead(
            servers=opts.bootstrap_servers,
            security=opts.security,
            topic=r.tp.topic,
            partition=r.tp.partition,
            start=r.start,
            end=r.end,
            leader=leader,
            include_headers=opts.include_headers,
            fail_on_data_loss=opts.fail_on_data_loss,
            poll_timeout_ms=opts.poll_timeout_ms,
            fetch_max_bytes=opts.fetch_max_bytes,
            read_committed=opts.isolation_level == "read_committed",
        )
    )


def _read(partition: InputPartition) -> Iterator[Any]:
    # With nothing to read, partitions() returns no partition and Spark still runs one task
    # with a placeholder partition of its own.
    if not isinstance(partition, RangePartition):
        return iter(())
    return read_range(partition.spec)


def _option_error(exc: OdradekError, opts: ReadOptions) -> OdradekSparkOptionError:
    return OdradekSparkOptionError(
        "odradek.bootstrap.servers",
        f"cannot reach the cluster at option 'odradek.bootstrap.servers' "
        f"({opts.bootstrap_servers}): {exc}",
    )


class OdradekBatchReader(DataSourceReader):
    """A batch read: offsets resolved once, one Spark partition per topic-partition range."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.opts = parse_read_options(options, streaming=False)

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.opts
        assert opts.ending is not None
        plan = planner(opts.bootstrap_servers, opts.security, opts.isolation_level)
        tps = plan.topic_partitions(opts.subscription)
        starts = plan.resolve(opts.starting, tps, opts.by_timestamp_strategy)
        ends = plan.resolve(opts.ending, tps)
        ranges = []
        for tp in tps:
            start, end = starts[tp], ends[tp]
            if start > end:
                raise OdradekSparkOptionError(
                    opts.starting.option,
                    f"{tp}: the starting offset {start} ({opts.starting.option}) is after the "
                    f"ending offset {end} ({opts.ending.option})",
                )
            ranges.append(OffsetRange(tp, start, end))
        pieces = split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
        log.info("batch read of %d partition(s) in %d Spark partition(s)", len(tps), len(pieces))
        return [_range_read(opts, r, plan.leader_hint(r.tp)) for r in pieces]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition)


class OdradekStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read; offsets are Spark's Kafka JSON (see the module docstring)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.opts = parse_read_options(options, streaming=True)
        self._initial: dict[str, dict[str, int]] | None = None
        self._target: dict[TopicPartition, int] | None = None
        self._clock = SystemClock()
        self._last_trigger_ms = self._clock.monotonic_ms()

    def _plan(self) -> Planner:
        return planner(self.opts.bootstrap_servers, self.opts.security, self.opts.isolation_level)

    def initialOffset(self) -> dict[str, dict[str, int]]:  # noqa: N802  (Spark's name)
        # Spark asks twice for the first batch: the second answer must be the same.
        if self._initial is None:
            plan = self._plan()
            tps = plan.topic_partitions(self.opts.subscription)
            offsets = plan.resolve(self.opts.starting, tps, self.opts.by_timestamp_strategy)
            self._initial = offsets_to_json(offsets)
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        limit = self.opts.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        plan = self._plan()
        self._target = plan.latest(plan.topic_partitions(self.opts.subscription))

    def latestOffset(  # noqa: N802
        self, start: dict[str, dict[str, int]], limit: ReadLimit
    ) -> dict[str, dict[str, int]]:
        plan = self._plan()
        begin = offsets_from_json(start)
        tps = plan.topic_partitions(self.opts.subscription)
        new = [tp for tp in tps if tp not in begin]
        if new:
            log.info("new partitions %s: reading them from the earliest offset", new)
            begin.update(plan.earliest(new))
        if self._target is not None:
            latest = {tp: self._target.get(tp, begin[tp]) for tp in tps}
        else:
            latest = plan.latest(tps)
        # Never move backwards (a high watermark below the checkpoint is reported by read()).
        latest = {tp: max(latest[tp], begin[tp]) for tp in tps}
        begin = {tp: begin[tp] for tp in tps}
        min_offsets = self.opts.min_offsets_per_trigger
        if min_offsets is not None and self._target is None:  # not with availableNow
            now = self._clock.monotonic_ms()
            if delay_batch(
                begin, latest, min_offsets, self._last_trigger_ms, now,
                self.opts.max_trigger_delay_ms,
            ):  # fmt: skip
                return start  # no new batch yet
            self._last_trigger_ms = now
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, latest, limit.max_rows)
        else:
            end = latest
        return offsets_to_json(end)

    def partitions(
        self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]
    ) -> Sequence[InputPartition]:
        begin = offsets_from_json(start)
        until = offsets_from_json(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            begin.update(self._plan().earliest(new))
        ranges = [OffsetRange(tp, begin[tp], stop) for tp, stop in until.items()]
        pieces = split_ranges(ranges, self.opts.min_partitions, self.opts.max_records_per_partition)
        plan = self._plan()
        return [_range_read(self.opts, r, plan.leader_hint(r.tp)) for r in pieces]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition)

    def commit(self, end: dict[str, dict[str, int]]) -> None:
        """The query's offsets live in Spark's checkpoint. With ``commitOffsetsToGroup`` the
        finished micro-batch's end offsets are also committed to the consumer group (an admin
        commit: the group has no members), for lag tools; a failed commit is logged, never
        fails the query."""
        group = self.opts.commit_group_id
        if group is None:
            return
        offsets = offsets_from_json(end)
        try:
            results = self._plan().admin.alter_consumer_group_offsets(group, offsets)
        except OdradekError as exc:
            log.warning("committing %s to group %s failed: %s", end, group, exc)
            return
        failed = {str(tp): str(e) for tp, e in results.items() if e is not None}
        if failed:
            log.warning("committing to group %s failed for %s", group, failed)


class OdradekDataSource(DataSource):
    """``spark.read.format("odradek")``, ``readStream``, ``write`` and ``writeStream``."""

    @classmethod
    def name(cls) -> str:
        return "odradek"

    def schema(self) -> str:
        # Validate here: errors raised by schema() surface at load().
        opts = parse_read_options(self.options, streaming=None)
        try:
            planner(opts.bootstrap_servers, opts.security).topic_partitions(opts.subscription)
        except OdradekSparkOptionError:
            raise
        except OdradekError as exc:
            raise _option_error(exc, opts) from None
        return spark_ddl(opts.include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return OdradekBatchReader(self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        return OdradekStreamReader(self.options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            # Spark's Kafka sink refuses it too: records can only be added to a topic, and
            # appending under the name "overwrite" would leave the old records in place
            raise OdradekSparkOptionError(
                "mode",
                "save mode 'overwrite' is not supported: a topic cannot be overwritten, only "
                "appended to; use mode('append')",
            )
        return OdradekBatchWriter(self.options, schema)

    def streamWriter(  # noqa: N802
        self, schema: StructType, overwrite: bool
    ) -> DataSourceStreamWriter:
        return OdradekStreamWriter(self.options, schema)
