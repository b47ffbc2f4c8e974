"""Deliberately broken variants of the simulated protocol, to prove the invariants can fail.

Each flag breaks one rule in the simulation's own code (never in ``node/``); the tests in
``test_replication_sim.py`` check that the invariants catch every one of them for some seed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class Mutations:
    follower_skips_truncation: bool = False
    """Followers never send their last fetched epoch and ignore diverging-epoch answers, so they
    keep records the new leader does not have (the bug leader epochs exist to prevent)."""
    follower_hw_from_leader: bool = False
    """Followers set their high watermark to min(leader's, own LEO) even when that is lower,
    instead of only raising it."""
    controller_unclean_election: bool = False
    """With no live ISR member, the controller elects any live replica (as
    ``unclean.leader.election.enable=true`` would) and does not say so."""
    controller_keeps_epoch: bool = False
    """The controller elects a new leader without bumping the leader epoch."""

    def enabled(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name)]
