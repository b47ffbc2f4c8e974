"""The follower side of replication (:mod:`node.replication.fetcher`) and the leader's ISR
updates to the controller (:mod:`node.replication.alter_partition`): gRPC clients of the other
nodes, driving :mod:`node.core`'s partitions."""
