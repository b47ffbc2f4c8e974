"""A local cluster on loopback: a real ZooKeeper (Debian's package) and node processes.

Used by the README's first command (``python -m deploy.local.cluster``), the integration tests
and the benchmarks.
"""
