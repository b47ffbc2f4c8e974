"""An idempotent producer against a log that rolls, is truncated by nothing, and is reopened
cleanly or not: every batch is stored once and in order whatever is sent again.

The oracle is the list of batches the producer sent for the first time. Rules checked:

* a new batch (next sequence, current epoch) is appended at the log end;
* the producer's last batch, sent again, is never appended and is answered with its original
  offsets — also after a reopen (it is in the snapshot, or in the replay);
* an older batch among the last five, sent again, is answered with its original offsets if
  the log has not been reopened since it was appended; after a reopen it may instead be
  refused (OUT_OF_ORDER_SEQUENCE_NUMBER: snapshots keep one batch per producer); it is never
  appended;
* a gap is refused; after an epoch bump the old epoch is refused and the new one starts at 0.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.clock import ManualClock
from odradek.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from odradek.records import Record, build_batch, read_batches
from storage import Log, LogConfig

PID = 99
TS = 1_700_000_000_000

ops = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(1, 5)),
        st.tuples(st.just("resend"), st.integers(0, 4)),
        st.tuples(st.just("gap"), st.integers(1, 3)),
        st.tuples(st.just("roll"), st.just(0)),
        st.tuples(st.just("reopen"), st.integers(0, 1)),
        st.tuples(st.just("bump"), st.just(0)),
    ),
    min_size=1,
    max_size=50,
)


def _batch(epoch: int, seq: int, count: int, tag: int) -> bytes:
    records = [Record(None, f"{tag}-{i}".encode(), timestamp=TS) for i in range(count)]
    return build_batch(records, producer_id=PID, producer_epoch=epoch, base_sequence=seq)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=ops, segment_bytes=st.integers(200, 2000), first_seq=st.sampled_from([0, 2**31 - 4]))
def test_each_batch_stored_once_in_order(
    ops: list[tuple[str, int]], segment_bytes: int, first_seq: int
) -> None:
    clock = ManualClock(wall_ms=TS)
    tmp = Path(tempfile.mkdtemp())
    config = LogConfig(segment_bytes=segment_bytes, file_delete_delay_ms=0)
    log = Log.open(tmp / "p-0", config, clock)
    try:
        # (epoch, seq, count, tag, first offset, appended since the last reopen)
        sent: list[tuple[int, int, int, int, int, bool]] = []
        epoch, seq, tag = 0, first_seq, 0
        for op, arg in ops:
            if op == "send":
                leo = log.log_end_offset
                info = log.append_as_leader(_batch(epoch, seq, arg, tag), 0)
                assert not info.duplicate and info.first_offset == leo
                sent.append((epoch, seq, arg, tag, leo, True))
                seq, tag = (seq + arg) % 2**31, tag + 1
            elif op == "resend" and sent:
                k = min(arg, len(sent) - 1)
                e, s, count, t, first, fresh = sent[-1 - k]
                leo = log.log_end_offset
                try:
                    info = log.append_as_leader(_batch(e, s, count, t), 0)
                except OutOfOrderSequenceError:
                    assert k > 0 and not fresh, "a remembered batch was refused"
                except InvalidProducerEpochError:
                    assert e < sent[-1][0]
                else:
                    assert info.duplicate and info.first_offset == first
                    # the log knows the epoch of its last batch, not an unused bump
                    assert e == sent[-1][0]
                assert log.log_end_offset == leo
            elif op == "gap" and sent:
                leo = log.log_end_offset
                try:
                    log.append_as_leader(_batch(epoch, (seq + arg) % 2**31, 1, -1), 0)
                except OutOfOrderSequenceError:
                    pass
                else:
                    # only a producer the log does not know is accepted at any sequence
                    raise AssertionError("a sequence gap was accepted")
                assert log.log_end_offset == leo
            elif op == "roll":
                log.roll()
            elif op == "reopen":
                clean = bool(arg)
                if clean:
                    log.flush()
                    log.close()
                    log = Log.open(
                        tmp / "p-0",
                        config,
                        clock,
                        recovery_point=log.log_end_offset,
                        had_clean_shutdown=True,
                    )
                else:
                    rp = log.recovery_point
                    for segment in log.segments():
                        segment.close_handlers()
                    log = Log.open(tmp / "p-0", config, clock, recovery_point=rp)
                sent = [(*x[:5], False) for x in sent]
            elif op == "bump" and sent:
                epoch, seq = epoch + 1, 0
                # the first batch of the new epoch must start at 0
                try:
                    log.append_as_leader(_batch(epoch, 5, 1, -1), 0)
                except OutOfOrderSequenceError:
                    pass
                else:
                    raise AssertionError("a new epoch started above sequence 0")
        # the log: exactly the sent batches, once each, in order
        stored = []
        offset = 0
        while offset < log.log_end_offset:
            batches = list(read_batches(log.read(offset, 1 << 20).records))
            stored += [
                (b.producer_epoch, b.base_sequence, b.records_count, b.base_offset) for b in batches
            ]
            offset = batches[-1].last_offset + 1
        assert stored == [(e, s, c, first) for e, s, c, _, first, _ in sent]
    finally:
        log.close()
        shutil.rmtree(tmp)
