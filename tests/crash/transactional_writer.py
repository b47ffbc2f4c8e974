"""A transactional writer for the crash tests: checks the recovered log, then appends until it
is killed.

Usage: ``python -m tests.crash.transactional_writer LOG_DIR SEED MAX KILL_MS``. Opens the log
directory with a ``LogManager`` (recovering it after the previous kill) and prints, flushed::

    CHECK ok                  the producer state, .txnindex and first unstable offset equal
                              what the log's batches alone say (tests.unit.storage.txn_helpers)
    CHECK <what differs>      otherwise

then appends, through the leader's path, transactional batches of three producers, plain
batches, and COMMIT / ABORT markers ending the producers' open transactions; after each append
the high watermark moves to the log end (one replica), and now and then the log rolls or
flushes. A timer thread kills the process with SIGKILL ``KILL_MS`` after the log is open;
otherwise after ``MAX`` appends it kills itself, or shuts the log manager down cleanly.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading

from odradek.clock import SystemClock
from odradek.records import ControlRecordType, EndTransactionMarker, Record, build_batch
from storage import LogConfig, LogManager
from tests.unit.storage.txn_helpers import expected_transactions, transaction_mismatches

CONFIG = LogConfig(segment_bytes=8 * 1024, index_interval_bytes=1024, flush_messages=37)
PRODUCERS = (31, 32, 33)
TOPIC = "txn"


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    log_dir, seed = sys.argv[1], int(sys.argv[2])
    max_appends, kill_ms = int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    clock = SystemClock()
    manager = LogManager([log_dir], CONFIG, clock)
    log = manager.get_or_create_log(TOPIC, 0)
    problems = transaction_mismatches(log)
    print(f"CHECK {'; '.join(problems) or 'ok'}", flush=True)
    open_ = dict(expected_transactions(log)[0])
    sequences = {
        pid: (e.last_seq + 1 if e.last_seq >= 0 else 0) for pid, e in log.producer_state().items()
    }
    timer = threading.Timer(kill_ms / 1000, _kill)
    timer.daemon = True
    timer.start()
    for _ in range(max_appends):
        pid = rng.choice(PRODUCERS)
        fate = rng.random()
        if fate < 0.25 and pid in open_:
            control = ControlRecordType.ABORT if rng.random() < 0.5 else ControlRecordType.COMMIT
            log.append_transaction_marker(pid, 0, EndTransactionMarker(control, 0), 1)
            del open_[pid]
        elif fate < 0.4:
            record = Record(b"plain", b"x" * rng.randint(1, 200), timestamp=clock.wall_ms())
            log.append_as_leader(build_batch([record]), 1)
        else:
            count = rng.randint(1, 4)
            records = [
                Record(f"k{i}".encode(), b"v" * rng.randint(1, 200), timestamp=clock.wall_ms())
                for i in range(count)
            ]
            batch = build_batch(
                records,
                producer_id=pid,
                producer_epoch=0,
                base_sequence=sequences.get(pid, 0),
                is_transactional=True,
            )
            info = log.append_as_leader(batch, 1)
            sequences[pid] = sequences.get(pid, 0) + count
            open_.setdefault(pid, info.first_offset)
        log.maybe_increment_high_watermark(log.log_end_offset)
        if rng.random() < 0.03:
            log.roll()
        elif rng.random() < 0.03:
            log.flush()
    if rng.random() < 0.5:
        _kill()
    manager.shutdown()
    os._exit(0)


if __name__ == "__main__":
    main()
