"""The client SDK's machinery, under :class:`odradek.Producer`, :class:`odradek.Consumer` and
:class:`odradek.Admin`.

Modules: :mod:`.types` (the public values: ``TopicPartition``, ``RecordMetadata``,
``ConsumerRecord``, ``OffsetAndTimestamp``), :mod:`.errors` (client-side errors and the mapping
of wire codes and gRPC statuses to typed errors), :mod:`.connection` (one gRPC channel per
node), :mod:`.metadata` (the cluster view and its refresh), :mod:`.accumulator` and
:mod:`.sender` (the producer's batching and I/O thread), :mod:`.fetcher` (fetch answers to
records), :mod:`.leaders` (requests that go to each partition's leader, with retries).

Everything here may change between releases; import the public names from :mod:`odradek`.
This package never imports the broker, the controller or storage.
"""
