"""odradek: a Kafka-lineage replicated, partitioned commit log.

What users import: the client SDK (:class:`Producer`, :class:`Consumer`,
:class:`ShareConsumer`, :class:`Admin` and their values), :mod:`odradek.records` (the record
batch v2 codec), :mod:`odradek.errors` (Kafka's error codes), :mod:`odradek.clock`, and the
``odradek`` command line.

The SDK names are loaded on first use (PEP 562), so ``import odradek.records`` — which the
broker's storage does — does not load gRPC.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Producer",
    "Consumer",
    "ShareConsumer",
    "AcknowledgeType",
    "ShareConsumerRecord",
    "Admin",
    "TopicPartition",
    "RecordMetadata",
    "ConsumerRecord",
    "OffsetAndTimestamp",
    "NewTopic",
    "NewPartitions",
    "ConfigChange",
    "ConfigEntry",
    "OffsetAndMetadata",
    "ConsumerGroupMetadata",
    "__version__",
]

_LAZY = {
    "Producer": "odradek.producer",
    "Consumer": "odradek.consumer",
    "ShareConsumer": "odradek.share_consumer",
    "AcknowledgeType": "odradek.share_consumer",
    "ShareConsumerRecord": "odradek.share_consumer",
    "Admin": "odradek.admin",
    "NewTopic": "odradek.admin",
    "NewPartitions": "odradek.admin",
    "OffsetAndMetadata": "odradek.client.group",
    "ConsumerGroupMetadata": "odradek.client.transactional",
    "ConfigChange": "odradek.admin",
    "ConfigEntry": "odradek.admin",
    "TopicPartition": "odradek.client.types",
    "RecordMetadata": "odradek.client.types",
    "ConsumerRecord": "odradek.client.types",
    "OffsetAndTimestamp": "odradek.client.types",
}

if TYPE_CHECKING:
    from odradek.admin import Admin, ConfigChange, ConfigEntry, NewPartitions, NewTopic
    from odradek.client.group import OffsetAndMetadata
    from odradek.client.transactional import ConsumerGroupMetadata
    from odradek.client.types import (
        ConsumerRecord,
        OffsetAndTimestamp,
        RecordMetadata,
        TopicPartition,
    )
    from odradek.consumer import Consumer
    from odradek.producer import Producer
    from odradek.share_consumer import AcknowledgeType, ShareConsumer, ShareConsumerRecord


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'odradek' has no attribute {name!r}")
    if "grpc" not in sys.modules:
        # gRPC's C core prints to stderr (e.g. "Handshake failed" lines, at INFO) unless
        # GRPC_VERBOSITY says otherwise, read once when grpc is imported: an application's
        # stderr is not the SDK's to write on. The SDK reports through its typed errors and
        # Python's logging instead. An explicit setting wins.
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
