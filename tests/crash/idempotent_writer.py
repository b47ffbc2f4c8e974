"""An idempotent producer's writer for the crash tests: appends until it is killed.

Usage: ``python -m tests.crash.idempotent_writer LOG_DIR SEED START MAX KILL_MS``. Opens the
log directory with a ``LogManager`` (recovering it after the previous kill), then appends the
batches ``START, START + 1, …`` of :func:`batch_specs` as producer :data:`PRODUCER_ID` through
the leader's append path: the batch ``START`` is the one whose answer the previous process
never printed, so it may already be in the log. After each append it prints, flushed at once::

    ACK <batch index> <first offset> <last offset> <0 | 1: answered as a duplicate>

A timer thread kills the process with SIGKILL ``KILL_MS`` after the log is open, wherever it
is (in an append, between files, while printing). Otherwise, after ``MAX`` appends, or by
chance after any append, it ends itself right after an append and before printing its answer
(the answer is lost): by SIGKILL, or by a clean shutdown of the log manager (which writes the
producer snapshot) followed by ``os._exit``. One append at a time, so at most one answer is
lost.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading

from odradek.clock import SystemClock
from odradek.records import Record, build_batch
from storage import LogConfig, LogManager

CONFIG = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=1024, flush_messages=53)
PRODUCER_ID = 4242
EPOCH = 0
FIRST_SEQUENCE = 2**31 - 1 - 700
"""Near the top of the int32 range, so the sequences wrap to 0 during the test."""


def batch_specs(seed: int, n: int) -> list[tuple[int, int]]:
    """``(base sequence, record count)`` of batches ``0..n-1``: counts from ``seed``, each
    batch's sequence following the last (wrapping after 2**31 - 1)."""
    rng = random.Random(seed)
    out = []
    seq = FIRST_SEQUENCE
    for _ in range(n):
        count = rng.randint(1, 12)
        out.append((seq, count))
        seq = (seq + count) % 2**31
    return out


def value_of(index: int, i: int) -> bytes:
    return f"batch-{index}-record-{i}".encode()


def batch_bytes(index: int, spec: tuple[int, int], now_ms: int) -> bytes:
    """Batch ``index``, timestamped now: a producer whose last timestamp is older than
    ``producer.id.expiration.ms`` is (rightly) forgotten when the log is reopened."""
    seq, count = spec
    return build_batch(
        [Record(f"k{index}".encode(), value_of(index, i), timestamp=now_ms) for i in range(count)],
        producer_id=PRODUCER_ID,
        producer_epoch=EPOCH,
        base_sequence=seq,
    )


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    log_dir, seed, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    max_appends, kill_ms = int(sys.argv[4]), int(sys.argv[5])
    # the round's kill time too: a writer that dies before its first answer starts the next
    # round at the same batch, and the same fates would make it die there again every round
    rng = random.Random((seed * 1_000_003 + start) * 1_000_033 + kill_ms)
    specs = batch_specs(seed, start + max_appends + 1)
    clock = SystemClock()
    manager = LogManager([log_dir], CONFIG, clock)
    log = manager.get_or_create_log("idem", 0)
    timer = threading.Timer(kill_ms / 1000, _kill)
    timer.daemon = True
    timer.start()
    for index in range(start, start + max_appends):
        batch = batch_bytes(index, specs[index], clock.wall_ms())
        info = log.append_as_leader(batch, leader_epoch=1)
        fate = rng.random()
        if fate < 0.02 or index == start + max_appends - 1:
            if fate < 0.01 or rng.random() < 0.5:
                _kill()  # the answer is lost
            manager.shutdown()  # clean: snapshot at the log end, then the answer is lost
            os._exit(0)
        print(
            f"ACK {index} {info.first_offset} {info.last_offset} {int(info.duplicate)}", flush=True
        )
        index += 1


if __name__ == "__main__":
    main()
