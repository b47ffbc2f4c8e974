"""odradek: a Kafka-lineage replicated, partitioned commit log.

What users import: :mod:`odradek.records` (the record batch v2 codec), :mod:`odradek.errors`
(Kafka's error codes), :mod:`odradek.clock`, and the ``odradek`` command line.
"""

__version__ = "0.1.0"
