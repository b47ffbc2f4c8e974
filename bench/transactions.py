"""Transactions benchmark: what Kafka's transactions cost a confluent-kafka (librdkafka) client
on odradek's Kafka listeners, each figure beside a baseline measured in the same run.

On a local three-node cluster (real ZooKeeper, nodes as processes, loopback, Kafka listeners on
every node; ``__transaction_state`` with 10 partitions, RF 3) and 100-byte records, it
measures:

* a transactional producer committing every 100 ms (``--commit-ms``) against the idempotent
  producer it is built on (the same settings without ``transactional.id``), ``--records``
  records into 1 and into 4 partitions of an RF-3 topic (min.insync.replicas 2), each
  transactional round bracketed by idempotent runs just before and after it (``txn_p1_ratio``,
  ``txn_p4_ratio``). A transaction takes records as fast as the client's queue does for 100 ms
  (the clock is read before each record and while the queue is full), then
  ``commit_transaction`` waits for all of them to be delivered and for EndTxn: so a
  transaction lasts 100 ms plus the delivery of what was queued, and the figure is the price
  of that wait (``txn_p1_transactions``, ``txn_p1_records_per_transaction``); and the cores
  the client process used in one more run of each (``client_cores_txn_p1``,
  ``client_cores_idempotent_p1``: the machine's cores are shared with the three nodes). To
  tell the transactions' own price from the stop-and-drain's, the idempotent producer also
  runs flushing every 100 ms (``flush_p1_ratio``: over the idempotent producer) and the
  transactional one is measured over that (``txn_over_flush_p1_ratio``);
* a ``read_committed`` consumer against a ``read_uncommitted`` one reading the same
  ``--read-records`` records, written by the transactional producer in committed transactions
  of ``--read-txn-records`` each (so one commit marker per transaction in the log) into an RF-3
  partition, each read_committed round between two read_uncommitted ones
  (``read_committed_ratio``);
* EndTxn latency: a transactional producer writes one record to each of 1 and of 10 partitions,
  flushes (AddPartitionsToTxn and the produce done), then times ``commit_transaction``
  (EndTxn: answered once PrepareCommit is replicated; the markers follow), ``--txns`` times;
  beside each, the same producer settings' idempotent produce-and-flush of one record (acks=all)
  timed in the same loop, the baseline: p50 / p99 of each and their ratio
  (``endtxn_p1_p50_ms``, ``endtxn_p1_p50_over_produce``, ...).

Ratios are printed, never asserted; every round's ratio is printed too (the machine is shared
and its speed drifts). It ends with one JSON line.

    python -m bench.transactions [--records 200000] [--repeat 3] [--txns 200]

The default run takes about two minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer, TopicPartition

from bench.cluster import _create_topic
from bench.kafka import PRODUCER_SETTINGS, _consumer, _ratio_into, _read, cores_while
from deploy.local.cluster import LocalCluster

RECORD_BYTES = 100
OVERRIDES = {
    "transaction.state.log.num.partitions": "10",
    "offsets.topic.num.partitions": "10",
}
"""Fewer internal partitions than Kafka's 50: the topics are created on the first call, and
their creation and loading are outside every timing."""


def _producer(bootstrap: str, transactional: bool, **extra: Any) -> Producer:
    """confluent-kafka's idempotent producer as ``bench.kafka`` sets it up, transactional
    (initialized) with ``transactional``."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS, **extra}
    if transactional:
        config["transactional.id"] = f"bench-{uuid.uuid4().hex[:8]}"
    producer = Producer(config)
    if transactional:
        producer.init_transactions(60)
    return producer


def produce_rate(
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int,
    every_ms: float | None,
    transactional: bool = True,
    transactions: list[int] | None = None,
) -> float:
    """``records`` produce() calls into ``topic``'s partitions ``0 .. partitions-1`` in turn;
    records/s from the first call to the last delivery. With ``every_ms``, a record that comes
    ``every_ms`` after the last such point first ends what was sent since: a transactional
    producer commits (and begins the next transaction), an idempotent one (``transactional``
    false) flushes. A warm-up record per partition, delivered (committed) first, is not
    counted. ``transactions`` gets how many commits (or flushes) the timed part made."""
    value = os.urandom(RECORD_BYTES)
    txn = every_ms is not None and transactional
    producer = _producer(bootstrap, txn)
    failures: list[str] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    def end_period() -> None:
        if txn:
            producer.commit_transaction(120)
        elif producer.flush(120):
            raise RuntimeError("records undelivered after 120 s")

    if txn:
        producer.begin_transaction()
    for partition in range(partitions):
        producer.produce(topic, value, partition=partition, on_delivery=report)
    end_period()
    produce, poll = producer.produce, producer.poll
    ended = 0
    clock = time.perf_counter
    start = clock()
    if txn:
        producer.begin_transaction()
    began = start
    period = None if every_ms is None else every_ms / 1000
    for i in range(records):
        while True:
            # checked while the client's queue is full too: a period ends on time even when
            # the producer is blocked on the queue
            if period is not None and clock() - began >= period:
                end_period()
                ended += 1
                if txn:
                    producer.begin_transaction()
                began = clock()
            try:
                produce(topic, value, partition=i % partitions, on_delivery=report)
                break
            except BufferError:
                poll(0.001)
    end_period()
    seconds = clock() - start
    if failures:
        raise RuntimeError(f"{len(failures)} records failed: {failures[:1]}")
    if transactions is not None:
        transactions[:] = [ended + 1]
    return records / seconds


def write_committed(bootstrap: str, topic: str, records: int, per_txn: int) -> None:
    """``records`` records into ``topic`` partition 0 in committed transactions of
    ``per_txn``."""
    value = os.urandom(RECORD_BYTES)
    producer = _producer(bootstrap, True)
    written = 0
    while written < records:
        producer.begin_transaction()
        for _ in range(min(per_txn, records - written)):
            while True:
                try:
                    producer.produce(topic, value, partition=0)
                    break
                except BufferError:
                    producer.poll(0.001)
            written += 1
        producer.commit_transaction(60)


def read_rate(bootstrap: str, topic: str, records: int, isolation: str) -> float:
    """A consumer with ``isolation.level`` ``isolation`` assigned ``topic`` partition 0 from
    the start reads ``records`` records (control records are not delivered); records/s from
    the assignment to the last."""
    consumer = _consumer({"bootstrap.servers": bootstrap, "isolation.level": isolation})
    try:
        start = time.perf_counter()
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen = _read(consumer, records)
        seconds = time.perf_counter() - start
    finally:
        consumer.close()
    return seen / seconds


def endtxn_latency(
    bootstrap: str, topic: str, partitions: int, txns: int, baseline_topic: str
) -> tuple[list[float], list[float]]:
    """(EndTxn latencies, baseline latencies), seconds: ``txns`` transactions of one record per
    partition of ``topic``, each flushed before ``commit_transaction`` is timed; after each, one
    idempotent record into ``baseline_topic`` partition 0 timed from produce() through
    ``flush``."""
    value = os.urandom(RECORD_BYTES)
    # linger.ms 0: the baseline's record leaves at once, as EndTxn does
    txn = _producer(bootstrap, True, **{"linger.ms": 0})
    plain = _producer(bootstrap, False, **{"linger.ms": 0})
    plain.produce(baseline_topic, value, partition=0)
    plain.flush(60)
    clock = time.perf_counter
    ends: list[float] = []
    produces: list[float] = []
    for i in range(txns + 1):  # the first is a warm-up
        txn.begin_transaction()
        for partition in range(partitions):
            txn.produce(topic, value, partition=partition)
        if txn.flush(60):
            raise RuntimeError("a transaction's records were not delivered")
        start = clock()
        txn.commit_transaction(60)
        end_s = clock() - start
        start = clock()
        plain.produce(baseline_topic, value, partition=0)
        if plain.flush(60):
            raise RuntimeError("a baseline record was not delivered")
        produce_s = clock() - start
        if i:
            ends.append(end_s)
            produces.append(produce_s)
    return ends, produces


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m bench.transactions")
    parser.add_argument("--records", type=int, default=200_000, help="records per produce run")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per ratio")
    parser.add_argument("--commit-ms", type=float, default=100.0)
    parser.add_argument("--read-records", type=int, default=100_000)
    parser.add_argument("--read-txn-records", type=int, default=1_000)
    parser.add_argument("--txns", type=int, default=200, help="timed EndTxn calls per setting")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    rounds = max(1, args.repeat)
    out: dict[str, Any] = {
        "record_bytes": RECORD_BYTES,
        "records": args.records,
        "repeat": rounds,
        "commit_ms": args.commit_ms,
        "read_records": args.read_records,
        "read_txn_records": args.read_txn_records,
        "txns": args.txns,
    }
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        cluster = LocalCluster(
            Path(tmp) / "cluster", 3, kafka_ports=[0, 0, 0], overrides=dict(OVERRIDES)
        )
        cluster.start()
        try:
            bootstrap = cluster.kafka_bootstrap_servers
            address = cluster.nodes[0].address
            for name, partitions in (("p1", 1), ("p4", 4), ("p10", 10), ("read", 1)):
                _create_topic(address, 3, topic=name, partitions=partitions)

            # -- a transactional producer committing every --commit-ms vs the idempotent one
            for name, partitions in (("p1", 1), ("p4", 4)):
                committed = [0]

                def txn(topic: str = name, n: int = partitions, c: list[int] = committed) -> float:
                    return produce_rate(
                        bootstrap, topic, args.records, n, args.commit_ms, transactions=c
                    )

                def idempotent(topic: str = name, n: int = partitions) -> float:
                    return produce_rate(bootstrap, topic, args.records, n, None)

                def flushing(topic: str = name, n: int = partitions) -> float:
                    return produce_rate(
                        bootstrap, topic, args.records, n, args.commit_ms, transactional=False
                    )

                _ratio_into(out, f"txn_{name}", rounds, txn, idempotent)
                # the same stop-and-drain every --commit-ms without a transaction, over the
                # idempotent producer; and the transactions over it: their own price
                _ratio_into(out, f"flush_{name}", rounds, flushing, idempotent)
                _ratio_into(out, f"txn_over_flush_{name}", rounds, txn, flushing)
                out[f"txn_{name}_transactions"] = committed[0]
                out[f"txn_{name}_records_per_transaction"] = args.records // max(1, committed[0])
                # the cores this process (the client) burns: the idempotent run's loop polls
                # while librdkafka's queue is full, the transactional one blocks in its commits
                for kind, run in (("txn", txn), ("idempotent", idempotent)):
                    cores = cores_while(os.getpid(), run)[1]
                    out[f"client_cores_{kind}_{name}"] = round(cores, 2)

            # -- read_committed vs read_uncommitted over committed transactions
            write_committed(bootstrap, "read", args.read_records, args.read_txn_records)

            def committed_read() -> float:
                return read_rate(bootstrap, "read", args.read_records, "read_committed")

            def uncommitted_read() -> float:
                return read_rate(bootstrap, "read", args.read_records, "read_uncommitted")

            _ratio_into(out, "read_committed", rounds, committed_read, uncommitted_read)

            # -- EndTxn latency with 1 and 10 partitions, beside a one-record produce
            for name, partitions in (("p1", 1), ("p10", 10)):
                ends, produces = endtxn_latency(bootstrap, name, partitions, args.txns, "p1")
                for label, values in (("endtxn", ends), ("produce", produces)):
                    out[f"{label}_{name}_p50_ms"] = round(statistics.median(values) * 1000, 2)
                    out[f"{label}_{name}_p99_ms"] = round(_percentile(values, 0.99) * 1000, 2)
                for q in ("p50", "p99"):
                    out[f"endtxn_{name}_{q}_over_produce"] = round(
                        out[f"endtxn_{name}_{q}_ms"] / out[f"produce_{name}_{q}_ms"], 3
                    )
            out["nodes_running"] = sum(node.running for node in cluster.nodes)
        finally:
            cluster.stop()
    report(out)
    return out


def report(out: dict[str, Any]) -> None:
    print(
        f"{out['records']} records of {RECORD_BYTES} bytes per produce run; confluent-kafka "
        f"acks=all, linger.ms 5, batch.size 65536; {out['repeat']} rounds per ratio"
    )
    for name in ("p1", "p4"):
        print(
            f"transactional, committing every {out['commit_ms']:g} ms, into {name[1:]} "
            f"partition(s): {out[f'txn_{name}_records_per_s']} records/s "
            f"({out[f'txn_{name}_transactions']} transactions in the last run, "
            f"{out[f'txn_{name}_records_per_transaction']} records each), "
            f"{out[f'txn_{name}_ratio']}x "
            f"the idempotent producer (rounds {out[f'txn_{name}_ratio_rounds']}); the "
            f"idempotent producer flushing every {out['commit_ms']:g} ms: "
            f"{out[f'flush_{name}_ratio']}x it (rounds {out[f'flush_{name}_ratio_rounds']}); "
            f"transactional over flushing {out[f'txn_over_flush_{name}_ratio']}x (rounds "
            f"{out[f'txn_over_flush_{name}_ratio_rounds']}); the client "
            f"used {out[f'client_cores_txn_{name}']} cores transactional, "
            f"{out[f'client_cores_idempotent_{name}']} idempotent"
        )
    print(
        f"read_committed over {out['read_records']} records in transactions of "
        f"{out['read_txn_records']}: {out['read_committed_records_per_s']} records/s, "
        f"{out['read_committed_ratio']}x read_uncommitted "
        f"(rounds {out['read_committed_ratio_rounds']})"
    )
    for name in ("p1", "p10"):
        print(
            f"EndTxn with {name[1:]} partition(s), {out['txns']} commits: p50 "
            f"{out[f'endtxn_{name}_p50_ms']} ms, p99 {out[f'endtxn_{name}_p99_ms']} ms; a "
            f"one-record acks=all produce beside it p50 {out[f'produce_{name}_p50_ms']} ms, p99 "
            f"{out[f'produce_{name}_p99_ms']} ms: {out[f'endtxn_{name}_p50_over_produce']}x / "
            f"{out[f'endtxn_{name}_p99_over_produce']}x"
        )
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
