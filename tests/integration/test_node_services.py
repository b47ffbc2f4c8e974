"""What generic gRPC tools see on a node: the health service and server reflection."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc


def test_health_and_reflection_are_served(make_cluster):
    cluster = make_cluster(1)
    channel = grpc.insecure_channel(cluster.node(0).address)
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "odradek.v1.Broker", "odradek.v1.Replication"):
        answer = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    [answer] = list(
        reflection.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10
        )
    )
    names = {s.name for s in answer.list_services_response.service}
    assert {
        "odradek.v1.Broker",
        "odradek.v1.Admin",
        "odradek.v1.Replication",
        "odradek.v1.Controller",
        "grpc.health.v1.Health",
    } <= names
    channel.close()
