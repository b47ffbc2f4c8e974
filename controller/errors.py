"""Errors of the controller package that have no Kafka wire code of their own."""

from __future__ import annotations

__all__ = ["ControllerMovedError", "NodeIdInUseError", "StateWriteConflictError"]


class ControllerMovedError(Exception):
    """This node is no longer the active controller: a write's check of ``/controller_epoch``'s
    version failed, or the election was lost (Kafka's ``ControllerMovedException``)."""


class StateWriteConflictError(Exception):
    """A partition state write lost its version race: the znode's version was not the one
    expected (someone else wrote it since it was read)."""

    def __init__(self, path: str, expected_version: int) -> None:
        super().__init__(f"{path} is not at version {expected_version}")
        self.path = path
        self.expected_version = expected_version


class NodeIdInUseError(RuntimeError):
    """Another live ZooKeeper session holds ``/brokers/ids/<id>``: two processes claim one node
    id. (A crashed process's registration lingers until its session times out.)"""
