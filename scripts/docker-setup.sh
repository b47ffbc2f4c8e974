#!/usr/bin/env bash
# Prepares a machine for the container fault suite (tests/containers), and only what is
# missing, so it is safe to run again (as root; run scripts/setup.sh first for .venv):
#   - Debian's docker.io, iptables, debootstrap and docker-compose;
#   - a Docker daemon (overlay2, logging to $DOCKERD_LOG) if none answers;
#   - the images: odradek-base:bookworm, odradek-node:dev, odradek-zookeeper:dev
#     (deploy/docker/build-images.sh; the base is rebuilt only when its inputs change).
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKERD_LOG=${DOCKERD_LOG:-/var/log/odradek-dockerd.log}
DOCKER=/usr/bin/docker  # Debian's client, the engine's own version

apt_install() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "docker-setup: need root to apt-get install $*" >&2
        exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null \
        || { apt-get update -q >/dev/null \
            && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null; }
}

missing=()
[ -x "$DOCKER" ] && [ -x /usr/sbin/dockerd ] || missing+=(docker.io)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)  # deploy/compose's test
if [ ${#missing[@]} -gt 0 ]; then
    echo "docker-setup: installing ${missing[*]}"
    apt_install "${missing[@]}"
fi

if ! "$DOCKER" info >/dev/null 2>&1; then
    echo "docker-setup: starting dockerd (log: $DOCKERD_LOG)"
    nohup /usr/sbin/dockerd --storage-driver=overlay2 >>"$DOCKERD_LOG" 2>&1 </dev/null &
    for _ in $(seq 60); do
        "$DOCKER" info >/dev/null 2>&1 && break
        sleep 1
    done
    if ! "$DOCKER" info >/dev/null 2>&1; then
        echo "docker-setup: dockerd did not answer within 60 s; its log ends:" >&2
        tail -n 30 "$DOCKERD_LOG" >&2
        exit 1
    fi
fi

PYTHON=${PYTHON:-.venv/bin/python}
if [ ! -x "$PYTHON" ]; then
    echo "docker-setup: no $PYTHON to make the wheelhouse with: run scripts/setup.sh first" >&2
    exit 1
fi
DOCKER=$DOCKER PYTHON=$PYTHON bash deploy/docker/build-images.sh
