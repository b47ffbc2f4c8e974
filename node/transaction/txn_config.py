"""The transaction coordinator's broker settings (Kafka's ``TransactionStateManagerConfig`` and
``TransactionLogConfig``: ``transaction.*`` and ``transaction.state.log.*``), apart from the
coordinator so that :mod:`node.config` can hold them without importing it."""

from __future__ import annotations

from dataclasses import dataclass, fields

from odradek.errors import InvalidConfigError

__all__ = ["BOOLEAN_PROPERTIES", "TRANSACTION_PROPERTIES", "TransactionConfig"]


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    """Kafka's names in :data:`TRANSACTION_PROPERTIES`. Raises ``InvalidConfigError`` for a
    non-positive value."""

    transaction_state_log_num_partitions: int = 50
    """Partitions of ``__transaction_state`` when it is created."""
    transaction_state_log_replication_factor: int = 3
    """Its replication factor, capped at the live brokers when it is created."""
    transaction_state_log_min_isr: int = 2
    """Its ``min.insync.replicas`` (capped at the replication factor)."""
    transaction_state_log_segment_bytes: int = 104_857_600
    """Its ``segment.bytes``."""
    transaction_max_timeout_ms: int = 900_000
    """The longest ``transaction.timeout.ms`` a producer may ask for (else
    INVALID_TRANSACTION_TIMEOUT)."""
    transactional_id_expiration_ms: int = 604_800_000
    """An id without a transaction for this long is removed."""
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    """How often transactions past their timeout are looked for (and aborted)."""
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    """How often expired ids are looked for."""
    transaction_partition_verification_enable: bool = True
    """KIP-890: a partition leader asks the coordinator before a producer's first
    transactional append to it (:mod:`node.apis.txn_verification`)."""
    request_timeout_ms: int = 30_000
    """How long a write to ``__transaction_state`` waits for its replicas."""

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name == "transaction_partition_verification_enable":
                continue
            if getattr(self, f.name) <= 0:
                raise InvalidConfigError(f"{f.name.replace('_', '.')} must be positive")


TRANSACTION_PROPERTIES = {
    f.name.replace("_", "."): f.name
    for f in fields(TransactionConfig)
    if f.name != "request_timeout_ms"
}
"""Kafka property name → :class:`TransactionConfig` field (``request.timeout.ms`` is the
node's own)."""

BOOLEAN_PROPERTIES = frozenset({"transaction.partition.verification.enable"})
