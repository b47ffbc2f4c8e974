"""DescribeLogDirs and a broker's DescribeConfigs over gRPC under an authorizer: DESCRIBE /
DESCRIBE_CONFIGS on the cluster, as Kafka (in-process SASL_SSL node of ``test_sasl.py``)."""

from __future__ import annotations

import pytest

from odradek import Admin, TopicPartition
from odradek.errors import ClusterAuthorizationFailedError
from tests.integration.security.test_sasl import Setup
from tests.integration.security.test_sasl import setup as setup  # the fixture


def test_a_user_without_cluster_describe_is_refused(setup: Setup) -> None:
    with Admin(setup.sasl, **setup.user("alice", "alice-secret")) as alice:
        with pytest.raises(ClusterAuthorizationFailedError, match="broker 1"):
            alice.describe_log_dirs()
        with pytest.raises(ClusterAuthorizationFailedError, match="broker 1"):
            alice.describe_broker_configs()
        # topics she may describe still answer
        assert alice.describe_configs(["orders"])["orders"]["retention.ms"].value
    with Admin(setup.internal, **setup.admin) as admin:  # a super user
        dirs = admin.describe_log_dirs()
        assert list(dirs) == [1]
        (only,) = dirs[1].values()
        assert TopicPartition("orders", 0) in only.replica_infos
        assert only.total_bytes is not None and only.total_bytes > 0
        assert admin.describe_broker_configs([1])[1]["num.partitions"].read_only
