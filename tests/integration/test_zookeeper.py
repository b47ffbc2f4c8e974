"""The ZooKeeper fixture itself: a real server that kazoo can use, isolated per test."""

from kazoo.client import KazooClient


def test_real_zookeeper_serves_a_chrooted_client(zk_connect):
    client = KazooClient(hosts=zk_connect, timeout=10)
    client.start(timeout=15)
    try:
        client.ensure_path("/brokers/ids")
        client.create("/brokers/ids/1", b"{}", ephemeral=True)
        assert client.get_children("/brokers/ids") == ["1"]
    finally:
        client.stop()
        client.close()
