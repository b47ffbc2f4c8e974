"""A node started from a stock Kafka ``config/server.properties`` serves producers and consumers.

``data/server.properties`` is Kafka's file (ZooKeeper mode) with its comments, with only the
listener, the log directory and ZooKeeper filled in for the test (and ``num.partitions=2``).
"""

from __future__ import annotations

from pathlib import Path

from deploy.local.cluster import NodeProcess
from deploy.local.zookeeper import free_port
from odradek import Admin, NewTopic, Producer
from tests.integration.helpers import consume_all, wait_for

STOCK = Path(__file__).parent / "data" / "server.properties"


class _FromFile(NodeProcess):
    """A node whose only argument is ``--config FILE``."""

    def __init__(self, config: Path, directory: Path, port: int) -> None:
        super().__init__(0, directory, "", port=port)
        self.config = config

    def command(self) -> list[str]:
        return [self.python, "-m", "node.main", "start", "--config", str(self.config)]


def test_a_stock_kafka_server_properties_starts_a_node_that_serves(tmp_path, zk_connect):
    port = free_port()
    text = (
        STOCK.read_text()
        .replace("${PORT}", str(port))
        .replace("${LOG_DIRS}", str(tmp_path / "kafka-logs"))
        .replace("${ZOOKEEPER_CONNECT}", zk_connect)
    )
    config = tmp_path / "server.properties"
    config.write_text(text)
    node = _FromFile(config, tmp_path / "node", port)
    node.start()
    try:
        bootstrap = node.address
        log = node.log_path.read_text()
        # the Kafka settings odradek has no use for are named once, not fatal
        ignored = [line for line in log.splitlines() if "ignoring Kafka settings" in line]
        assert len(ignored) == 1, log
        assert "num.network.threads" in ignored[0] and "socket.send.buffer.bytes" in ignored[0]
        assert "log.retention.hours" not in ignored[0]  # odradek has retention: it is read

        admin = Admin(bootstrap)
        # no partition count: the file's num.partitions=2 applies
        admin.create_topics([NewTopic("stock")])
        wait_for(
            lambda: (
                len(admin.describe_topics(["stock"])["stock"].partitions) == 2
                and all(p.leader == 0 for p in admin.describe_topics(["stock"])["stock"].partitions)
            ),
            "the topic's two partitions led by node 0",
        )
        # log.retention.hours=168 is the topics' default retention
        retention = admin.describe_configs(["stock"])["stock"]["retention.ms"]
        assert retention.value == str(168 * 3_600_000)
        admin.close()
        with Producer(bootstrap, acks=-1) as producer:
            futures = [producer.send("stock", f"v{i}".encode(), partition=i % 2) for i in range(20)]
            producer.flush(60)
        assert all(f.result(timeout=0).offset >= 0 for f in futures)
        consumed = consume_all(bootstrap, "stock", 2)
        assert sorted(v for p in consumed.values() for _, v in p) == sorted(
            f"v{i}".encode() for i in range(20)
        )
    finally:
        node.stop()
    assert node.process is not None and node.process.returncode == 0, node.tail()
