"""Who is calling and what they may do, whatever the front door: principals, the ACL
authorizer, SCRAM credentials and SASL sessions, TLS configuration and the TLS relay. No grpc,
protobuf or Kafka codec."""
