"""The transaction coordinator's room (Kafka's ``kafka.coordinator.transaction``): its state
machine (:mod:`node.transaction.txn_state`) over ``__transaction_state``'s records
(:mod:`odradek.txn_records`)."""
