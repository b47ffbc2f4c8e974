"""Kafka's record batch v2 codec (placeholder until the codec lands)."""
