"""The replication decisions of a partition, as pure functions of their inputs.

Kafka's ``Partition`` and ``Replica`` mix these rules with locking and I/O; here each rule is a
function of plain values (offsets, replica sets, ``now_ms``) so it can be tested alone and reused
by the broker and by the simulation in ``tests/sim``. Sources are named per function; see also
sections 2.2 to 2.6 of the replication reference.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from odradek.errors import FencedLeaderEpochError, OdradekError, UnknownLeaderEpochError

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
NEVER_MS = -(2**62)
"""``last_caught_up_ms`` of a follower that has never been caught up (Kafka uses 0 with wall
time; on a monotonic clock that starts near 0, 0 would count as recent)."""


@dataclass(frozen=True, slots=True)
class FollowerFetchState:
    """What the leader knows of one follower (Kafka's ``ReplicaState``)."""

    log_end_offset: int = UNDEFINED_OFFSET
    log_start_offset: int = UNDEFINED_OFFSET
    last_caught_up_ms: int = NEVER_MS
    last_fetch_leader_leo: int = UNDEFINED_OFFSET
    last_fetch_ms: int = 0
    broker_epoch: int = -1
    data_answered_ms: int = NEVER_MS
    """When the leader last answered this follower with records (at its fetch, or later when
    a long poll ended with data): the follower fetches again at once after such an answer."""


def update_follower_fetch_state(
    state: FollowerFetchState,
    *,
    fetch_offset: int,
    log_start_offset: int,
    leader_leo: int,
    now_ms: int,
    broker_epoch: int = -1,
) -> FollowerFetchState:
    """The follower's state after a fetch at ``fetch_offset`` (Kafka's ``updateFetchStateOrThrow``).

    The follower is caught up as of this fetch if it asked for the leader's LEO; otherwise, if
    it asked for at least the LEO the leader had at its previous fetch, it was caught up as of
    that previous fetch. This keeps a follower of a constantly written partition in sync.
    """
    if fetch_offset >= leader_leo:
        caught_up = max(state.last_caught_up_ms, now_ms)
    elif fetch_offset >= state.last_fetch_leader_leo >= 0:
        caught_up = max(state.last_caught_up_ms, state.last_fetch_ms)
    else:
        caught_up = state.last_caught_up_ms
    return FollowerFetchState(
        log_end_offset=fetch_offset,
        log_start_offset=log_start_offset,
        last_caught_up_ms=caught_up,
        last_fetch_leader_leo=leader_leo,
        last_fetch_ms=now_ms,
        broker_epoch=broker_epoch,
        data_answered_ms=now_ms if fetch_offset < leader_leo else state.data_answered_ms,
    )


def is_caught_up(
    state: FollowerFetchState, *, leader_leo: int, now_ms: int, replica_lag_time_max_ms: int
) -> bool:
    """Kafka's ``isCaughtUp``: at the leader's LEO, or caught up within the lag limit."""
    return (
        state.log_end_offset == leader_leo
        or now_ms - state.last_caught_up_ms <= replica_lag_time_max_ms
    )


def effective_min_isr(min_insync_replicas: int, replication_factor: int) -> int:
    return min(min_insync_replicas, replication_factor)


def high_watermark_candidate(
    *,
    leader_id: int,
    leader_leo: int,
    followers: Mapping[int, FollowerFetchState],
    maximal_isr: Collection[int],
    eligible: Collection[int],
    now_ms: int,
    replica_lag_time_max_ms: int,
    silent: Collection[int] = (),
) -> int:
    """The offset the high watermark may rise to (Kafka's ``maybeIncrementLeaderHW``).

    The leader's LEO, lowered to the LEO of every follower that is in the maximal ISR (the
    committed ISR plus replicas a pending change adds), or that is caught up and eligible to
    join it. A follower whose LEO is unknown (-1) holds the high watermark where it is.
    ``silent`` followers (:func:`silent_replicas`) outside the maximal ISR do not count: one
    dropped for its silence would otherwise still hold the high watermark until the lag limit.
    """
    candidate = leader_leo
    for replica_id, state in followers.items():
        if replica_id == leader_id:
            continue
        counts = replica_id in maximal_isr or (
            replica_id in eligible
            and replica_id not in silent
            and is_caught_up(
                state,
                leader_leo=leader_leo,
                now_ms=now_ms,
                replica_lag_time_max_ms=replica_lag_time_max_ms,
            )
        )
        if counts:
            candidate = min(candidate, state.log_end_offset)
    return candidate


def next_high_watermark(
    *,
    current: int,
    candidate: int,
    isr_size: int,
    min_isr: int,
) -> int:
    """The new high watermark: it only rises, and not at all while the ISR is under the minimum.

    Since Kafka 3.7 a leader whose ISR is smaller than the effective min.insync.replicas does
    not advance the high watermark, so an acks=1 write cannot become visible (and then lost)
    while too few replicas hold it.
    """
    if isr_size < min_isr:
        return current
    return max(current, candidate)


def out_of_sync_replicas(
    *,
    leader_id: int,
    isr: Collection[int],
    followers: Mapping[int, FollowerFetchState],
    leader_leo: int,
    now_ms: int,
    replica_lag_time_max_ms: int,
) -> set[int]:
    """ISR members (other than the leader) that are no longer caught up (Kafka's
    ``getOutOfSyncReplicas``): to be removed by an ISR shrink."""
    out: set[int] = set()
    for replica_id in isr:
        if replica_id == leader_id:
            continue
        state = followers.get(replica_id, FollowerFetchState())
        if not is_caught_up(
            state,
            leader_leo=leader_leo,
            now_ms=now_ms,
            replica_lag_time_max_ms=replica_lag_time_max_ms,
        ):
            out.add(replica_id)
    return out


def silent_replicas(
    *,
    leader_id: int,
    isr: Collection[int],
    followers: Mapping[int, FollowerFetchState],
    now_ms: int,
    silence_max_ms: int,
    fetch_wait_max_ms: int = 0,
    resumed_ms: int = NEVER_MS,
) -> set[int]:
    """ISR members (other than the leader) that have fetched during this leadership and then
    sent no fetch for longer than ``silence_max_ms`` after their next one was due; none when
    ``silence_max_ms`` is 0 (off).

    A follower's next fetch is due as soon as its last one is answered: when the leader sent it
    records for that fetch (``data_answered_ms``: at once if the leader had data for it, or
    when data came during the long poll), else up to ``fetch_wait_max_ms`` after the fetch (the
    long poll waits that long for data). A follower that has not fetched since this leadership
    began (its state was reset) is never silent: it may still be learning of the new leader,
    and ``replica.lag.time.max.ms`` bounds its stay. Silence is counted from ``resumed_ms`` at
    the earliest: when the leader itself last resumed from a stall of its own (paused, starved),
    since the fetches sent meanwhile wait unread in its sockets.

    Not a Kafka rule (``replica.fetch.silence.max.ms`` is odradek's): a live follower fetches
    again within milliseconds of an answer, so silence much longer than that means a dead,
    hung or cut-off follower, which Kafka only drops after ``replica.lag.time.max.ms`` or its
    ZooKeeper session's expiry, stalling acks=-1 writes meanwhile. Dropping it early is as safe
    as any ISR shrink: the controller commits the new ISR before the high watermark may use it,
    and the follower rejoins once caught up.
    """
    if silence_max_ms <= 0:
        return set()
    out: set[int] = set()
    for replica_id in isr:
        state = followers.get(replica_id)
        if replica_id == leader_id or state is None or state.last_fetch_leader_leo < 0:
            continue
        if state.data_answered_ms >= state.last_fetch_ms:
            due = state.data_answered_ms
        else:
            due = state.last_fetch_ms + fetch_wait_max_ms
        if now_ms - max(due, resumed_ms) > silence_max_ms:
            out.add(replica_id)
    return out


def can_join_isr(
    *,
    replica_id: int,
    follower_leo: int,
    isr: Collection[int],
    high_watermark: int,
    leader_epoch_start_offset: int,
    eligible: Collection[int],
) -> bool:
    """Kafka's ``isFollowerInSync`` + ``needsExpandIsr``: a follower outside the ISR joins once
    its LEO reaches the high watermark and the start of the current leader epoch."""
    return (
        replica_id not in isr
        and replica_id in eligible
        and follower_leo >= high_watermark
        and follower_leo >= leader_epoch_start_offset
    )


def check_leader_epoch(requested: int, current: int) -> OdradekError | None:
    """Kafka's ``checkCurrentLeaderEpoch``: -1 is not checked; older is fenced, newer unknown."""
    if requested in (UNDEFINED_EPOCH, current):
        return None
    if requested < current:
        return FencedLeaderEpochError(f"leader epoch {requested} is older than {current}")
    return UnknownLeaderEpochError(f"leader epoch {requested} is newer than {current}")


def diverging_epoch(
    *, last_fetched_epoch: int, fetch_offset: int, leader_end_for_epoch: tuple[int, int]
) -> tuple[int, int] | None:
    """What the leader answers a follower whose log may diverge (Kafka's ``readRecords``).

    ``leader_end_for_epoch`` is the leader's ``(epoch, end_offset)`` for the follower's last
    fetched epoch. If the leader has no such epoch, or it ended before the fetch offset, the
    follower must truncate first: the answer is the epoch and end offset to truncate by.
    """
    if last_fetched_epoch == UNDEFINED_EPOCH:
        return None
    epoch, end_offset = leader_end_for_epoch
    if epoch < last_fetched_epoch or end_offset < fetch_offset:
        return epoch, end_offset
    return None


@dataclass(frozen=True, slots=True)
class TruncationState:
    """Where a follower truncates to, and whether it may fetch afterwards or must ask again."""

    offset: int
    truncation_completed: bool


def follower_truncation(
    *,
    leader_epoch: int,
    leader_end_offset: int,
    follower_end_for_leader_epoch: tuple[int, int],
    follower_leo: int,
    follower_high_watermark: int,
) -> TruncationState:
    """Where a follower truncates after a diverging-epoch answer
    (Kafka's ``AbstractFetcherThread.getOffsetTruncationState``).

    ``follower_end_for_leader_epoch`` is the follower's own ``(epoch, end_offset)`` for the
    leader's epoch. If the follower knows that epoch, it cuts at the smaller end offset. If it
    does not, it cuts at the end of its largest earlier epoch and asks again with that epoch.
    """
    if leader_end_offset == UNDEFINED_OFFSET:
        return TruncationState(min(follower_high_watermark, follower_leo), True)
    if leader_epoch == UNDEFINED_EPOCH:
        return TruncationState(min(leader_end_offset, follower_leo), True)
    follower_epoch, follower_end = follower_end_for_leader_epoch
    if follower_epoch == UNDEFINED_EPOCH or follower_end == UNDEFINED_OFFSET:
        # the follower tracks no epochs (a new or emptied replica): the leader's end offset
        # for an epoch older than the follower asked about is safe to cut at
        return TruncationState(min(leader_end_offset, follower_leo), True)
    if follower_epoch != leader_epoch:
        # the follower does not know the leader's epoch: cut at its own end of the largest
        # epoch below it, then ask the leader again about that epoch
        return TruncationState(min(follower_end, follower_leo), False)
    return TruncationState(min(leader_end_offset, follower_end, follower_leo), True)
