"""The broker process: a gRPC server hosting partition replicas (built by the cluster issue)."""
