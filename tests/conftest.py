import pytest

from odradek.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(wall_ms=1_700_000_000_000, monotonic_ms=1_000)
