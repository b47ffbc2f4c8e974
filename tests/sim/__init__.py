"""The replication simulation: a seeded, deterministic in-process cluster (docs/simulation.md)."""
