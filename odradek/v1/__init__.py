"""The odradek wire API, version 1: code generated from ``proto/odradek/v1/odradek.proto``.

Regenerate with ``bash scripts/genproto.sh``; CI fails when the checked-in files differ from
what the .proto files generate. Import ``odradek.v1.odradek_pb2`` (messages) and
``odradek.v1.odradek_pb2_grpc`` (stubs and servicers).
"""
