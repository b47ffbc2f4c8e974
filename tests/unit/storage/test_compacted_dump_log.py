"""``odradek dump-log`` on segments the cleaner wrote: gaps between and inside batches, tombstones
with their delete horizon, and a batch kept as a bare header, all shown plainly; the cleaner's
indexes verify against its log."""

from __future__ import annotations

import json

from odradek.cli import main
from tests.unit.storage.compaction_helpers import Oracle, keyed_batch
from tests.unit.storage.test_log_cleaner import TP, cleaner, commit, make_log

DAY = 24 * 3600 * 1000


def test_a_compacted_segment_dumps_its_gaps_and_tombstones_plainly(tmp_path, clock, capsys):
    log = make_log(tmp_path, clock, segment_bytes=100_000, index_interval_bytes=0)
    oracle = Oracle()
    t = clock.wall_ms()

    def put(*pairs):
        info = log.append_as_leader(keyed_batch(list(pairs), t), leader_epoch=0)
        oracle.append(info.first_offset, list(pairs))

    put((b"a", b"1"), (b"b", b"2"), (b"c", b"3"))  # 0..2: b is superseded at 3
    put((b"b", b"4"))  # 3
    put((b"d", b"5"), (b"e", b"6"))  # 4..5: both superseded below
    put((b"d", b"7"), (b"e", None))  # 6..7: e deleted
    put((b"f", b"8"))  # 8: superseded in the next segment; the segment's last batch
    log.roll()
    put((b"f", b"9"))  # 9
    commit(log)
    # Two groups: the first segment's last batch is then its group's last, kept as a header.
    log.update_config(log.config.replace(segment_bytes=log.segments()[0].size))
    stats = cleaner(tmp_path, clock).clean_log(TP, log)
    assert stats is not None and stats.groups == 2
    oracle.check(log)
    first = log.segments()[0].log.path
    log.flush()

    code = main(["dump-log", "--deep-iteration", "--print-data-log", str(first)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    shape = [
        line.split(" count:")[0] if line.startswith("baseOffset") else line.split(" CreateTime")[0]
        for line in lines[2:]
    ]
    assert shape == [
        "baseOffset: 0 lastOffset: 2",
        "| offset: 0",
        "| gap: offsets 1..1 are absent",
        "| offset: 2",
        "baseOffset: 3 lastOffset: 3",
        "| offset: 3",
        "gap: offsets 4..5 are absent",
        "baseOffset: 6 lastOffset: 7",
        "| offset: 6",
        "| offset: 7",
        "baseOffset: 8 lastOffset: 8",
        "| gap: offsets 8..8 are absent",
    ]
    by_offset = {line.split()[2]: line for line in lines if line.startswith("| offset:")}
    assert by_offset["7"].endswith("key: e payload: <tombstone>")
    assert by_offset["6"].endswith("key: d payload: 7")
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert f"deleteHorizonMs: {t + DAY} " in batches[2]
    assert "deleteHorizonMs: none " in batches[1]
    assert " count: 0 " in batches[3] and " size: 61 " in batches[3]

    code = main(["dump-log", "--json", "--deep-iteration", str(first)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["valid"]
    assert doc["gaps"][0] == {"first_offset": 1, "last_offset": 1, "within_batch_at": 0}
    tombstones = [r["offset"] for b in doc["batches"] for r in b["records"] if r["tombstone"]]
    assert tombstones == [7]

    code = main(["dump-log", "--verify-index", str(first.with_suffix(".index"))])
    out = capsys.readouterr().out
    assert code == 0 and "no mismatches" in out
