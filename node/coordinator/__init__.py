"""The consumer group coordinator (KIP-848) and the producer id manager, over the core's
partitions (``__consumer_offsets``). Plain values in and out; no grpc, protobuf or Kafka
codec."""
