"""A crash at every file-system step of a cleaning pass leaves, once the log is reopened,
exactly the old segments or the new ones for each group — never a mix (Kafka's
LogCleanerTest#testRecoveryAfterCrash, made exhaustive).

The steps are the renames and unlinks (``Path.replace``, ``Path.unlink``): what the loader
reads to decide between abandoning a pass and finishing it. The crash is an exception raised
instead of the n-th step; from then on every step fails too, so no clean-up runs, as after
SIGKILL. ``tests/crash`` kills real processes at random moments as well.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from odradek.clock import ManualClock
from storage import Log, LogConfig
from storage.config import CleanerConfig
from storage.log_cleaner import LogCleaner
from tests.unit.storage.compaction_helpers import Oracle, Stored, keyed_batch, read_log

TP = ("t", 0)


class Crash(BaseException):
    """The process died here."""


def prepare(root: Path, clock: ManualClock, config: LogConfig) -> Oracle:
    log = Log.open(root / "t-0", config, clock)
    oracle = Oracle()
    for r in range(6):
        for k in range(7):
            value = None if (r, k) in {(2, 3), (5, 6)} else f"v{r}-{k}".encode()
            pairs = [(f"k{k}".encode(), value)]
            info = log.append_as_leader(keyed_batch(pairs, clock.wall_ms()), leader_epoch=0)
            oracle.append(info.first_offset, pairs)
            if info.first_offset % 4 == 3:
                log.roll()  # small segments, so that groups merge several
    log.roll()
    log.flush()
    log.close()
    return oracle


def open_log(directory: Path, config: LogConfig, clock: ManualClock, **kw) -> Log:
    log = Log.open(directory, config, clock, **kw)
    log.update_high_watermark(log.log_end_offset)
    return log


def abandon(log: Log) -> None:
    for segment in log.segments():
        segment.close_handlers()


def crash_at(monkeypatch: pytest.MonkeyPatch, n: int) -> list[int]:
    calls = [0]
    real_replace, real_unlink = Path.replace, Path.unlink

    def step() -> None:
        calls[0] += 1
        if calls[0] >= n:
            raise Crash(f"step {calls[0]}")

    def replace(self: Path, target: Path) -> Path:
        step()
        return Path(real_replace(self, target))

    def unlink(self: Path, missing_ok: bool = False) -> None:
        step()
        real_unlink(self, missing_ok)

    monkeypatch.setattr(Path, "replace", replace)
    monkeypatch.setattr(Path, "unlink", unlink)
    return calls


def states(pre: list[Stored], post: list[Stored], boundaries: list[int]) -> list[list[Stored]]:
    """What the log may hold after a crash: the first k groups cleaned, the rest not."""
    return [
        [r for r in post if r.offset < boundary] + [r for r in pre if r.offset >= boundary]
        for boundary in boundaries
    ]


@pytest.mark.parametrize(
    ("delete_delay_ms", "reopen_recovery_point"), [(0, "zero"), (60_000, "active")]
)
def test_a_crash_at_any_step_of_a_pass_leaves_old_or_new_segments(
    tmp_path, monkeypatch, delete_delay_ms, reopen_recovery_point
):
    # Durability is not what is tested here (the order of the steps is), and ~80 passes of
    # fsyncs would take most of the test's time.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    clock = ManualClock()
    config = LogConfig(
        cleanup_policy="compact",
        segment_bytes=700,
        segment_index_bytes=4096,
        file_delete_delay_ms=delete_delay_ms,
        delete_retention_ms=0,
    )
    origin = tmp_path / "origin"
    oracle = prepare(origin, clock, config)

    def fresh(name: str) -> Path:
        root: Path = tmp_path / name
        shutil.copytree(origin, root)
        return root

    # The uninterrupted pass, for the states a crash may leave.
    root = fresh("complete")
    log = open_log(root / "t-0", config, clock)
    pre = read_log(log)
    active_base = log.active_segment.base_offset
    stats = LogCleaner([root], CleanerConfig(dedupe_buffer_bytes=1 << 16), clock).clean_log(TP, log)
    assert stats is not None and stats.groups >= 3
    assert stats.segments_cleaned > stats.groups + 3  # several groups merge segments
    post = read_log(log)
    assert post != pre
    log.close()
    bounds = [*stats.group_bases, log.log_end_offset]
    allowed = states(pre, post, bounds)

    seen = set()
    n = 1
    while True:
        root = fresh(f"crash-{n}")
        log = open_log(root / "t-0", config, clock)
        cleaner = LogCleaner([root], CleanerConfig(dedupe_buffer_bytes=1 << 16), clock)
        calls = crash_at(monkeypatch, n)
        try:
            cleaner.clean_log(TP, log)
            crashed = False
        except Crash:
            crashed = True
        monkeypatch.undo()
        monkeypatch.setattr(os, "fsync", lambda fd: None)
        abandon(log)
        recovery_point = 0 if reopen_recovery_point == "zero" else active_base
        reopened = open_log(root / "t-0", config, clock, recovery_point=recovery_point)
        records = read_log(reopened)
        assert records in allowed, f"crash at step {n} of {calls[0]} left a mix"
        seen.add(allowed.index(records))
        oracle.check(reopened)
        leftovers = [
            p.name for p in (root / "t-0").iterdir() if p.name.endswith((".cleaned", ".swap"))
        ]
        assert leftovers == [], f"crash at step {n}: {leftovers}"
        for segment in reopened.segments():
            segment.offset_index.sanity_check()
            segment.time_index.sanity_check()
        reopened.close()
        if not crashed:
            break
        n += 1
    # The crashes landed before, between and after the groups' swaps.
    assert seen == set(range(len(allowed))), seen
    assert n > 3 * stats.groups
