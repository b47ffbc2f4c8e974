#!/usr/bin/env bash
# The README's first command: installs what is missing (scripts/setup.sh), starts a real
# ZooKeeper and three odradek nodes on loopback (127.0.0.1:2181, gRPC on :9092-9094, Kafka's
# wire protocol on :19092-19094, data in .cluster/), creates a replicated topic, produces and
# consumes through it, describes the cluster, shows kcat and confluent-kafka using it, and
# starts the web console (http://127.0.0.1:8080/, `--console-port` for another; docs/console.md).
# The cluster keeps running; `bash scripts/cluster.sh stop` stops it, and running this again
# starts it on the same data (the demo's records are produced once). Other ports:
# `bash scripts/cluster.sh --ports A,B,C --kafka-ports D,E,F --zookeeper-port Z`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [[ "${1:-}" == "stop" ]]; then
    exec .venv/bin/python -m deploy.local.cluster stop --dir .cluster
fi
exec .venv/bin/python -m deploy.local.cluster demo --dir .cluster \
    --stop-command "bash scripts/cluster.sh stop" "$@"
