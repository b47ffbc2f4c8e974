"""The source refuses offsets JSON naming a partition the topic does not have, as Spark's Kafka
source does ("you must specify all TopicPartitions"); it used to drop it silently."""

from __future__ import annotations

import pytest

from odradek.client.types import TopicPartition
from odradek.spark.options import OdradekSparkOptionError, OffsetSpec
from odradek.spark.source import Planner

T0, T1, T5 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 5)


@pytest.mark.parametrize(
    "spec",
    [
        OffsetSpec("offsets", "startingOffsets", offsets={T0: 1, T1: 2, T5: 3}),
        OffsetSpec("offsets", "endingOffsets", offsets={T0: 1, T1: 2, T5: 3}),
        OffsetSpec("timestamps", "startingOffsetsByTimestamp", timestamps={T0: 1, T5: 3}),
    ],
)
def test_a_partition_the_topic_lacks_is_refused(spec: OffsetSpec) -> None:
    planner = Planner("127.0.0.1:1")  # never contacted: the check comes first
    try:
        with pytest.raises(OdradekSparkOptionError) as info:
            planner.resolve(spec, [T0, T1])
        assert info.value.option == spec.option
        assert "t-5" in str(info.value)
    finally:
        planner.admin.close()
        planner.consumer.close()
