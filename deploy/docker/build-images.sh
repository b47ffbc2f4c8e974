#!/usr/bin/env bash
# Builds odradek's container images on a machine that can reach Debian's archive and the Python
# package index from the host, but no image registry:
#
#   odradek-base:bookworm        Debian bookworm (debootstrap, minbase) with python3, a headless
#                                Java 17 and ZooKeeper's jars from Debian's packages. Rebuilt only
#                                when its inputs change: the image carries their hash as a label.
#   odradek-node:$TAG            the node (deploy/docker/node.Dockerfile) installed from a
#                                wheelhouse made on the host (pip cannot reach the index from
#                                inside `docker build` here).
#   odradek-zookeeper:$TAG       a standalone ZooKeeper (deploy/docker/zookeeper.Dockerfile).
#
# Usage: bash deploy/docker/build-images.sh [--wheelhouse-only]
# Environment: DOCKER (docker client), PYTHON (a Python with pip, default .venv/bin/python),
# ODRADEK_IMAGE_TAG (default dev), DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Needs root for debootstrap and chroot (only when the base image must be built).
set -euo pipefail
cd "$(dirname "$0")/../.."

DOCKER=${DOCKER:-docker}
PYTHON=${PYTHON:-.venv/bin/python}
TAG=${ODRADEK_IMAGE_TAG:-dev}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE_IMAGE=odradek-base:bookworm
BASE_PACKAGES="python3 python3-venv openjdk-17-jre-headless libzookeeper-java procps iproute2 ca-certificates"
CONTEXT=deploy/docker
WHEELHOUSE=$CONTEXT/wheelhouse

log() { echo "build-images: $*"; }

build_base() {
    # The base's inputs: the suite, the package list and this function's text. The archive's
    # package versions are not an input: rebuild by hand (docker rmi) to pick up updates.
    local hash
    hash=$(printf '%s\n%s\n%s\n' bookworm "$BASE_PACKAGES" "$(declare -f build_base)" | sha256sum | cut -c1-16)
    if [ -n "$("$DOCKER" images -q --filter "label=org.odradek.base-inputs=$hash" "$BASE_IMAGE")" ]; then
        log "$BASE_IMAGE is up to date (inputs $hash)"
        return
    fi
    log "building $BASE_IMAGE from Debian packages (inputs $hash)"
    ROOTFS=$(mktemp -d /tmp/odradek-rootfs.XXXXXX)
    trap remove_rootfs EXIT
    local rootfs=$ROOTFS
    debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 \
        || { tail -n 30 "$rootfs.log" >&2; exit 1; }
    mount -t proc proc "$rootfs/proc"  # the JRE's post-install runs java, which needs /proc
    # shellcheck disable=SC2086  # a list of packages
    chroot "$rootfs" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends $BASE_PACKAGES >>"$rootfs.log" 2>&1 \
        || { tail -n 30 "$rootfs.log" >&2; exit 1; }
    umount "$rootfs/proc"
    chroot "$rootfs" apt-get clean
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/doc/* \
        "$rootfs"/usr/share/man/*
    tar -C "$rootfs" -c . | "$DOCKER" import \
        --change "LABEL org.odradek.base-inputs=$hash" \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        - "$BASE_IMAGE" >/dev/null
    log "built $BASE_IMAGE"
    remove_rootfs
}

ROOTFS=
remove_rootfs() {
    if [ -n "$ROOTFS" ]; then
        umount "$ROOTFS/proc" 2>/dev/null || true
        # --one-file-system: never descend into a mount left behind (/proc of the chroot)
        rm -rf --one-file-system "$ROOTFS" "$ROOTFS.log"
        ROOTFS=
    fi
}

build_wheelhouse() {
    # The project as one wheel plus its runtime dependencies and the console extra's (not the
    # spark or dev extras).
    # Downloads happen only when the dependency list changes (a stamp file holds its hash).
    mkdir -p "$WHEELHOUSE"
    local deps stamp
    deps=$("$PYTHON" -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["console"]))')
    stamp=$(printf '%s\n' "$deps" | sha256sum | cut -c1-16)
    if [ "$(cat "$WHEELHOUSE/.deps-stamp" 2>/dev/null)" != "$stamp" ]; then
        log "downloading runtime dependencies into $WHEELHOUSE"
        rm -f "$WHEELHOUSE"/*.whl
        printf '%s\n' "$deps" >"$WHEELHOUSE/requirements.txt"
        "$PYTHON" -m pip download --quiet --only-binary=:all: -d "$WHEELHOUSE" -r "$WHEELHOUSE/requirements.txt"
        echo "$stamp" >"$WHEELHOUSE/.deps-stamp"
    fi
    rm -f "$WHEELHOUSE"/odradek-*.whl
    "$PYTHON" -m pip wheel --quiet --no-deps -w "$WHEELHOUSE" .
}

build_image() {
    local name=$1 dockerfile=$2
    log "building $name"
    DOCKER_BUILDKIT=0 "$DOCKER" build --quiet --network host \
        --build-arg "BASE=$BASE_IMAGE" -f "$dockerfile" -t "$name" "$CONTEXT" >/dev/null
}

build_wheelhouse
if [ "${1:-}" = "--wheelhouse-only" ]; then
    exit 0
fi
build_base
build_image "odradek-node:$TAG" "$CONTEXT/node.Dockerfile"
build_image "odradek-zookeeper:$TAG" "$CONTEXT/zookeeper.Dockerfile"
log "done: odradek-node:$TAG odradek-zookeeper:$TAG"
