#!/usr/bin/env bash
# The README's first command: installs what is missing (scripts/setup.sh), starts a real
# ZooKeeper and three odradek nodes on loopback (127.0.0.1:2181, :9092-9094, data in .cluster/),
# creates a replicated topic, produces and consumes through it, describes the cluster, and
# starts the web console (http://127.0.0.1:8080/, `--console-port` for another; docs/console.md).
# The cluster keeps running; `bash scripts/cluster.sh stop` stops it, and running this again
# starts it on the same data (the demo's records are produced once). Other ports:
# `bash scripts/cluster.sh --ports A,B,C --zookeeper-port Z`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [[ "${1:-}" == "stop" ]]; then
    exec .venv/bin/python -m deploy.local.cluster stop --dir .cluster
fi
exec .venv/bin/python -m deploy.local.cluster demo --dir .cluster \
    --stop-command "bash scripts/cluster.sh stop" "$@"
