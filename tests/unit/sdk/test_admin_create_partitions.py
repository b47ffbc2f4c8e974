"""Admin.create_partitions against in-process gRPC nodes: the request on the wire, per-topic
results, and NewPartitions' own checks."""

from __future__ import annotations

import pytest

from odradek import Admin
from odradek.admin import NewPartitions
from odradek.errors import InvalidPartitionsError, UnknownTopicOrPartitionError


def test_create_partitions_sends_kafkas_request_and_reports_each_topic(cluster):
    cluster.create_topic("grow", 2, 2)
    with Admin(cluster.bootstrap) as admin:
        results = admin.create_partitions(
            {
                "grow": NewPartitions(4, [[1, 2], [2, 3]]),
                "same": NewPartitions(1),
                "missing": NewPartitions(3),
            },
            timeout_ms=1234,
            validate_only=True,
        )
    cluster.create_topic("same", 1, 1)  # created after the first request
    assert results["grow"] is None
    assert isinstance(results["same"], UnknownTopicOrPartitionError)
    assert isinstance(results["missing"], UnknownTopicOrPartitionError)
    (_rpc, _, request), *_ = [c for c in cluster.calls if c[0] == "CreatePartitions"]
    assert request.timeout_ms == 1234 and request.validate_only
    grow = request.topics[0]
    assert (grow.name, grow.count) == ("grow", 4)
    assert [list(a.broker_ids) for a in grow.assignments] == [[1, 2], [2, 3]]
    assert list(request.topics[1].assignments) == []  # cluster-assigned
    with Admin(cluster.bootstrap) as admin:
        error = admin.create_partitions({"same": NewPartitions(1)})["same"]
        assert isinstance(error, InvalidPartitionsError)
        assert admin.create_partitions({"grow": NewPartitions(3)})["grow"] is None
        assert len(admin.describe_topics(["grow"])["grow"].partitions) == 3


@pytest.mark.parametrize(
    "kwargs",
    [{"total_count": 0}, {"total_count": True}, {"total_count": 2, "new_assignments": [[]]}],
)
def test_new_partitions_refuses_what_cannot_be_asked(kwargs):
    with pytest.raises(ValueError):
        NewPartitions(**kwargs)
