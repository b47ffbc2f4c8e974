#!/usr/bin/env bash
# Regenerates the checked-in Python code for proto/odradek/v1/*.proto into odradek/v1/:
# messages (*_pb2.py), gRPC stubs (*_pb2_grpc.py) and mypy-protobuf stubs (*.pyi).
#   bash scripts/genproto.sh          regenerate in place
#   bash scripts/genproto.sh --check  regenerate into a temporary directory and fail on any
#                                     difference with the checked-in files (CI runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
out="."
if [[ "${1:-}" == "--check" ]]; then
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    mkdir -p "$out/odradek/v1"
fi
PATH="$(dirname "$PY"):$PATH" "$PY" -m grpc_tools.protoc -I proto \
    --python_out="$out" --grpc_python_out="$out" \
    --mypy_out="$out" --mypy_grpc_out="$out" \
    proto/odradek/v1/*.proto
if [[ "${1:-}" == "--check" ]]; then
    status=0
    for f in "$out"/odradek/v1/*; do
        name="odradek/v1/$(basename "$f")"
        if ! cmp -s "$f" "$name"; then
            echo "genproto: $name differs from what proto/ generates; run bash scripts/genproto.sh" >&2
            diff -u "$name" "$f" | head -20 >&2 || true
            status=1
        fi
    done
    exit $status
fi
