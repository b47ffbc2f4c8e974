"""The gRPC front door: the servicers of the Broker, Replication, Controller, Admin and Sasl
services, their interceptors (authentication, request metrics) and TLS credentials. Each
servicer translates protobuf to the core's values and back; it never imports
:mod:`node.kafka_door`."""
