"""``Admin.describe_topics`` answers per topic, as Kafka's ``describeTopics`` (issue 27): a
topic that cannot be described does not hide the others; its error is raised when it is read
(the per-topic future's ``get()``) and listed in ``errors``. And the values the issue found
missing from the package's top level are importable from ``odradek``."""

from __future__ import annotations

import pytest

import odradek
from odradek.admin import DescribeTopicsResult
from odradek.errors import UnknownTopicOrPartitionError
from tests.unit.sdk.test_admin import admin  # noqa: F401 (the fixture)


def test_a_missing_topic_does_not_hide_the_others(cluster, admin) -> None:  # noqa: F811
    cluster.create_topic("a", 2, 2)
    result = admin.describe_topics(["a", "zzz"])
    assert isinstance(result, DescribeTopicsResult)
    assert list(result) == ["a", "zzz"] and "zzz" in result and len(result) == 2
    assert [p.partition for p in result["a"].partitions] == [0, 1]
    assert set(result.described) == {"a"}
    assert isinstance(result.errors["zzz"], UnknownTopicOrPartitionError)
    with pytest.raises(UnknownTopicOrPartitionError, match="'zzz' does not exist"):
        result["zzz"]
    with pytest.raises(UnknownTopicOrPartitionError):
        dict(result)  # every topic at once: the first error (Kafka's allTopicNames().get())


def test_offset_and_metadata_and_new_partitions_are_importable_from_odradek() -> None:
    from odradek import NewPartitions, OffsetAndMetadata

    assert OffsetAndMetadata(5, "m").offset == 5
    assert NewPartitions(3).total_count == 3
    assert {"OffsetAndMetadata", "NewPartitions"} <= set(odradek.__all__)
