"""The SDK and the command line on a node whose listeners are all SSL with mTLS (in-process
node, real ZooKeeper)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from node.config import NodeConfig
from node.listeners import Listener
from node.security.tls import SslConfig
from node.server import Node
from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.cli import main as cli
from odradek.client.errors import SslAuthenticationError
from tests.certs import CertificateAuthority
from tests.integration.helpers import wait_for


@pytest.fixture
def tls(tmp_path: Path) -> dict[str, str]:
    """A CA, a node keystore, a client certificate of the CA and one of another CA."""
    ca, other = CertificateAuthority("odradek-test-ca"), CertificateAuthority("another-ca")
    _, _, node = ca.issue("CN=node-1,OU=Brokers", ["localhost", "127.0.0.1"]).write(
        tmp_path, "node-1"
    )
    key, cert, both = ca.issue("CN=alice,OU=Users").write(tmp_path, "alice")
    _, _, mallory = other.issue("CN=mallory,OU=Users").write(tmp_path, "mallory")
    return {
        "cafile": str(ca.write(tmp_path / "ca.crt")),
        "node": str(node),
        "alice_key": str(key),
        "alice_cert": str(cert),
        "alice_pem": str(both),
        "mallory_pem": str(mallory),
    }


@pytest.fixture
def bootstrap(tmp_path: Path, zk_connect: str, tls: dict[str, str]) -> Iterator[str]:
    config = NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zk_connect,
        listeners=(Listener("SSL", "127.0.0.1", 0),),
        advertised_listeners=(Listener("SSL", "localhost", 0),),
        ssl=SslConfig(
            keystore_location=tls["node"], truststore_location=tls["cafile"], client_auth="required"
        ),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    try:
        node.start()
        yield f"localhost:{node.port}"
    finally:
        node.stop(controlled=False)


def test_sdk_clients_with_kafka_python_settings(bootstrap: str, tls: dict[str, str]) -> None:
    security = {
        "security_protocol": "SSL",
        "ssl_cafile": tls["cafile"],
        "ssl_certfile": tls["alice_cert"],
        "ssl_keyfile": tls["alice_key"],
    }
    with Admin(bootstrap, **security) as admin:  # type: ignore[arg-type]
        wait_for(lambda: admin.cluster_metadata().brokers, "a live broker")
        assert admin.create_topics([NewTopic("orders", 1, 1)]) == {"orders": None}
    with Producer(bootstrap, **security) as producer:  # type: ignore[arg-type]
        producer.send("orders", b"over tls").result(timeout=30)
    with Consumer(bootstrap, auto_offset_reset="earliest", **security) as consumer:  # type: ignore[arg-type]
        consumer.assign([TopicPartition("orders", 0)])
        records = wait_for(lambda: consumer.poll(timeout_ms=500), "the record")
        assert [r.value for r in records] == [b"over tls"]
    # a client certificate of another CA, or none, does not get in, and is told why
    for certfile, why in (
        (tls["mallory_pem"], "does not trust the client's certificate"),
        (None, "requires a client certificate"),
    ):
        with (
            Admin(
                bootstrap,
                request_timeout_ms=5_000,
                security_protocol="SSL",
                ssl_cafile=tls["cafile"],
                ssl_certfile=certfile,
            ) as admin,
            pytest.raises(SslAuthenticationError, match=why),
        ):
            admin.cluster_metadata()


def test_command_line_with_a_kafka_client_properties_file(
    bootstrap: str, tls: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={tls['cafile']}\n"
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.location={tls['alice_pem']}\n"
    )
    base = ["--bootstrap-server", bootstrap, "--command-config", str(config)]
    assert cli([*base, "topics", "create", "payments", "--partitions", "1"]) == 0
    assert cli([*base, "topics", "list"]) == 0
    assert "payments" in capsys.readouterr().out
    # the group commands too (they built their clients without it: plaintext to TLS)
    assert cli([*base, "groups", "list"]) == 0
    assert cli([*base, "share-groups", "list"]) == 0
    # the option may follow the command too, as Kafka's tools take it
    assert (
        cli(["--bootstrap-server", bootstrap, "topics", "list", "--command-config", str(config)])
        == 0
    )
    # the health check a container runs
    address = ["node", "health", "--address", bootstrap]
    assert cli([*address, "--command-config", str(config)]) == 0
    assert cli(address) == 1  # plaintext to a TLS listener
    config.write_text("security.protocol=SSL\nssl.truststore.location=/nonexistent/ca.crt\n")
    assert cli([*base, "topics", "list"]) == 1
    assert "ssl_cafile: cannot read /nonexistent/ca.crt" in capsys.readouterr().err


def test_spark_reads_and_writes_over_tls(bootstrap: str, tls: dict[str, str]) -> None:
    import pyarrow as pa  # type: ignore[import-untyped]

    from odradek.spark.options import parse_read_options, parse_write_options
    from odradek.spark.reader import RangeRead, read_range
    from odradek.spark.source import planner
    from odradek.spark.writer import write_rows

    options = {
        "kafka.bootstrap.servers": bootstrap,
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.location": tls["cafile"],
        "kafka.ssl.keystore.location": tls["alice_pem"],
    }
    write = parse_write_options({**options, "topic": "spark"})
    with Admin(bootstrap, **write.security.options()) as admin:
        wait_for(lambda: admin.cluster_metadata().brokers, "a live broker")
        assert admin.create_topics([NewTopic("spark", 1, 1)]) == {"spark": None}
    rows = pa.record_batch([pa.array([b"a", b"b", b"c"], pa.binary())], names=["value"])
    write_rows(write, iter([rows]))
    read = parse_read_options({**options, "subscribe": "spark"}, streaming=False)
    assert planner(bootstrap, read.security).topic_partitions(read.subscription) == [
        TopicPartition("spark", 0)
    ]
    spec = RangeRead(
        servers=bootstrap, topic="spark", partition=0, start=0, end=3, security=read.security
    )
    values = [v for batch in read_range(spec) for v in batch.column("value").to_pylist()]
    assert values == [b"a", b"b", b"c"]
