"""controller.controller_takeover: when a standby probes the active controller."""

from __future__ import annotations

import pytest

from controller.controller_takeover import ControllerTakeover

HOLDER = (1, 0xABC)


def test_only_the_known_holder_of_another_node_is_probed() -> None:
    takeover = ControllerTakeover(node_id=2, probe_interval_ms=200)
    assert takeover.unreachable(1, 0) is None  # no /controller known yet
    takeover.holder_changed(HOLDER)
    assert takeover.unreachable(3, 0) is None  # not the holder known here
    assert takeover.unreachable(1, 0) == HOLDER
    takeover.holder_changed((2, 0xDEF))
    assert takeover.unreachable(2, 1_000) is None  # this node itself


def test_one_probe_per_interval_and_at_once_for_a_new_holder() -> None:
    takeover = ControllerTakeover(node_id=2, probe_interval_ms=200)
    takeover.holder_changed(HOLDER)
    assert takeover.unreachable(1, 1_000) == HOLDER
    assert takeover.unreachable(1, 1_199) is None
    assert takeover.unreachable(1, 1_200) == HOLDER
    takeover.holder_changed(HOLDER)  # the same holder read again: the interval runs on
    assert takeover.unreachable(1, 1_300) is None
    takeover.holder_changed((1, 0xDEF))  # node 1 again, with a new session: a new holder
    assert takeover.unreachable(1, 1_300) == (1, 0xDEF)


def test_a_holder_found_gone_is_taken_over_only_while_it_still_holds() -> None:
    takeover = ControllerTakeover(node_id=2, probe_interval_ms=200)
    takeover.holder_changed(HOLDER)
    assert takeover.still_holder(HOLDER)
    takeover.holder_changed(None)
    assert not takeover.still_holder(HOLDER)
    assert takeover.unreachable(1, 0) is None


def test_the_interval_is_positive() -> None:
    with pytest.raises(ValueError, match="probe_interval_ms"):
        ControllerTakeover(node_id=2, probe_interval_ms=0)
