"""The broker's core: the partitions this node hosts and the requests on them (Kafka's
``ReplicaManager``, ``Partition``, ``MetadataCache`` and purgatory). It takes and returns plain
values with Kafka error codes; the front doors (:mod:`node.grpc_door`, :mod:`node.kafka_door`)
translate their wire types to and from them. Imports no grpc, protobuf or Kafka codec."""
