"""node.core.wakeups: a change wakes exactly the waiters that asked for it, and none is lost."""

from __future__ import annotations

import threading

from node.core.wakeups import DATA, HIGH_WATERMARK, LOG_START, STATE, Wakeups

A = ("t", 0)
B = ("t", 1)


def test_a_change_wakes_only_the_waiters_of_its_partition_that_asked_for_its_kind():
    wakeups = Wakeups()
    with (
        wakeups.waiting([A], DATA) as data_a,
        wakeups.waiting([A], HIGH_WATERMARK) as hw_a,
        wakeups.waiting([B], DATA) as data_b,
    ):
        wakeups.notify(A, DATA)
        assert data_a.wait(0)
        assert not hw_a.wait(0)
        assert not data_b.wait(0)


def test_a_state_change_wakes_every_waiter_of_the_partition():
    wakeups = Wakeups()
    with (
        wakeups.waiting([A], DATA) as data_a,
        wakeups.waiting([A, B], LOG_START) as start_ab,
        wakeups.waiting([B], HIGH_WATERMARK) as hw_b,
    ):
        wakeups.notify(A, STATE)
        assert data_a.wait(0)
        assert start_ab.wait(0)
        assert not hw_b.wait(0)


def test_a_produce_waiter_is_woken_only_once_the_high_watermark_reaches_what_it_needs():
    wakeups = Wakeups()
    with (
        wakeups.waiting([A, B], HIGH_WATERMARK, {A: 10, B: 20}) as produce,
        wakeups.waiting([A], HIGH_WATERMARK) as consumer,
    ):
        wakeups.notify(A, HIGH_WATERMARK, high_watermark=9)
        assert consumer.wait(0)  # a consumer needs no particular offset
        assert not produce.wait(0)
        wakeups.notify(B, HIGH_WATERMARK, high_watermark=19)
        assert not produce.wait(0)
        wakeups.notify(A, HIGH_WATERMARK, high_watermark=10)
        assert produce.wait(0)
        produce.clear()
        wakeups.notify(B, HIGH_WATERMARK | DATA, high_watermark=15)  # DATA is not asked for
        assert not produce.wait(0)
        wakeups.notify(B, HIGH_WATERMARK)  # the high watermark not given: wake to re-check
        assert produce.wait(0)
        produce.clear()
        wakeups.notify(B, STATE, high_watermark=0)  # leadership or ISR changes always wake
        assert produce.wait(0)


def test_a_waiter_without_a_required_offset_for_the_partition_is_always_woken():
    wakeups = Wakeups()
    with wakeups.waiting([A, B], HIGH_WATERMARK, {A: 10}) as waiter:
        wakeups.notify(B, HIGH_WATERMARK, high_watermark=0)
        assert waiter.wait(0)


def test_a_change_between_the_check_and_the_wait_is_not_lost():
    wakeups = Wakeups()
    with wakeups.waiting([A], HIGH_WATERMARK) as waiter:
        waiter.clear()
        wakeups.notify(A, HIGH_WATERMARK | DATA)  # after the check, before the wait
        assert waiter.wait(5)
        waiter.clear()
        assert not waiter.wait(0)


def test_a_waiting_thread_is_woken_from_another_thread():
    wakeups = Wakeups()
    woken = threading.Event()

    def wait() -> None:
        with wakeups.waiting([A], HIGH_WATERMARK) as waiter:
            ready.set()
            if waiter.wait(10):
                woken.set()

    ready = threading.Event()
    thread = threading.Thread(target=wait)
    thread.start()
    assert ready.wait(5)
    wakeups.notify(A, DATA)  # not what it waits for
    assert not woken.wait(0.05)
    wakeups.notify(A, HIGH_WATERMARK)
    thread.join(5)
    assert woken.is_set()


def test_waiters_are_removed_when_they_stop_waiting():
    wakeups = Wakeups()
    with wakeups.waiting([A, B], DATA), wakeups.waiting([A], DATA):
        assert wakeups.waiter_count() == 2
    assert wakeups.waiter_count() == 0
    wakeups.notify(A, STATE)  # nobody left: nothing to do


def test_notify_all_and_close_wake_everyone_and_close_wakes_later_waiters_at_once():
    wakeups = Wakeups()
    with wakeups.waiting([A], DATA) as a, wakeups.waiting([B], LOG_START) as b:
        wakeups.notify_all()
        assert a.wait(0) and b.wait(0)
        a.clear()
        b.clear()
        wakeups.close()
        assert a.wait(0) and b.wait(0)
    with wakeups.waiting([A], DATA) as late:
        assert late.wait(0)


def test_a_subscriber_is_called_for_what_it_asked_for_until_it_unsubscribes():
    wakeups = Wakeups()
    calls: list[str] = []
    stop = wakeups.subscribe([A], HIGH_WATERMARK, {A: 10}, lambda: calls.append("woken"))
    wakeups.notify(A, DATA)
    wakeups.notify(A, HIGH_WATERMARK, high_watermark=9)  # below what it needs
    assert calls == []
    assert wakeups.waiter_counts() == (1, 0)  # a waiting produce, in the purgatory's count
    wakeups.notify(A, HIGH_WATERMARK, high_watermark=10)
    wakeups.notify(A, STATE)
    assert calls == ["woken", "woken"]
    stop()
    wakeups.notify(A, STATE)
    assert calls == ["woken", "woken"]
    assert wakeups.waiter_count() == 0


def test_a_subscriber_after_close_is_called_at_once():
    wakeups = Wakeups()
    calls: list[str] = []
    wakeups.close()
    stop = wakeups.subscribe([A], HIGH_WATERMARK, None, lambda: calls.append("woken"))
    assert calls == ["woken"]
    stop()
