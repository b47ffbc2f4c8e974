"""Metadata's auto-creation (Kafka's AutoTopicCreationManager in ZooKeeper mode): the answer
per name, and the in-flight set, with create_topics stood in for (the real one is exercised
against ZooKeeper in tests/integration/admin)."""

from node.admin.admin_manager import AdminManager
from node.admin.requests import CreatableTopicResult
from odradek.clock import ManualClock


class Answering(AdminManager):
    """create_topics answers ``codes[name]`` and, meanwhile, another auto-creation of the
    same names arrives (as a concurrent Metadata request would)."""

    def __init__(self, codes):
        super().__init__(None, ManualClock())
        self.codes = codes
        self.created: list[list[str]] = []
        self.concurrent: list[dict[str, int]] = []

    def create_topics(self, topics, *, validate_only=False, timeout_ms=0):
        assert (validate_only, timeout_ms) == (False, 0)
        assert all((t.num_partitions, t.replication_factor) == (-1, -1) for t in topics)
        names = [t.name for t in topics]
        self.created.append(names)
        self.concurrent.append(self.auto_create_topics(names))
        return [CreatableTopicResult(n, self.codes.get(n, 0)) for n in names]


def test_each_name_gets_kafkas_answer():
    admin = Answering({"exists": 36, "timed-out": 7, "too-many": 38})
    out = admin.auto_create_topics(
        ["new", "exists", "timed-out", "too-many", "bad name", "__consumer_offsets", "new"]
    )
    assert out == {
        "new": 5,  # created: LEADER_NOT_AVAILABLE until its leaders are known
        "exists": 5,  # TOPIC_ALREADY_EXISTS: the same
        "timed-out": 5,  # REQUEST_TIMED_OUT: created, as Kafka reads it
        "too-many": 38,  # INVALID_REPLICATION_FACTOR passes through
        "bad name": 17,  # INVALID_TOPIC_EXCEPTION, never sent on
        "__consumer_offsets": 3,  # its coordinator creates it
    }
    assert admin.created == [["new", "exists", "timed-out", "too-many"]]


def test_a_topic_being_created_answers_unknown_until_done():
    admin = Answering({})
    assert admin.auto_create_topics(["t"]) == {"t": 5}
    # the request that came while "t" was in flight: UNKNOWN_TOPIC_OR_PARTITION, no second
    # creation
    assert admin.concurrent == [{"t": 3}]
    assert admin.created == [["t"]]
    # once done, "t" is no longer in flight
    assert admin.auto_create_topics(["t"]) == {"t": 5}
    assert admin.created == [["t"], ["t"]]
