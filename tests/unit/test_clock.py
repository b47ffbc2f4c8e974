import pytest

from odradek.clock import ManualClock, SystemClock


def test_manual_clock_moves_only_forward() -> None:
    clock = ManualClock(wall_ms=1000, monotonic_ms=5)
    clock.advance(250)
    assert (clock.wall_ms(), clock.monotonic_ms()) == (1250, 255)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    assert clock.wall_ms() == 1250


def test_system_clock_monotonic_reading_does_not_decrease() -> None:
    clock = SystemClock()
    readings = [clock.monotonic_ms() for _ in range(1000)]
    assert readings == sorted(readings)
    assert clock.wall_ms() > 1_600_000_000_000
