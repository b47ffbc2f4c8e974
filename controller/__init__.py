"""The ZooKeeper-backed controller (built by the cluster issue)."""
