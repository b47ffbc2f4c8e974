#!/usr/bin/env bash
# Installs everything odradek needs on a fresh machine, and only what is missing, so it is safe
# to run again:
#   - Debian's zookeeper package (the real ZooKeeper the cluster and the tests run) and Java,
#     and Netty's codec jar its TLS port needs (libnetty-java; deploy/local/zookeeper.py);
#   - the Kafka clients the tests drive against the Kafka listeners: Debian's kcat, and kafkajs
#     from npm (tests/kafka/js, on Debian's nodejs);
#   - Debian's chromium and chromium-driver (the web console's browser tests);
#   - a virtualenv in .venv with the project (editable) and its development tools.
# With --venv-only, only the virtualenv (all that lint, types and the unit and property tests
# need: `bash scripts/test.sh --quick`), no Debian or npm package.
set -euo pipefail
cd "$(dirname "$0")/.."

venv_only=0
case "${1:-}" in
    --venv-only) venv_only=1 ;;
    "") ;;
    *) echo "usage: bash scripts/setup.sh [--venv-only]" >&2; exit 2 ;;
esac

apt_install() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: need root to apt-get install $*" >&2
        exit 1
    fi
    # wait for another apt-get (a second setup running) rather than fail on its lock
    local apt=(apt-get -o DPkg::Lock::Timeout=600)
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -q "$@" >/dev/null \
        || { "${apt[@]}" update -q >/dev/null && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -q "$@" >/dev/null; }
}

system_packages() {
    if [ ! -f /usr/share/java/zookeeper.jar ]; then
        echo "setup: installing Debian's zookeeper package"
        apt_install zookeeper
    fi
    if [ ! -f /usr/share/java/netty-codec.jar ]; then
        echo "setup: installing Netty (libnetty-java) for ZooKeeper's TLS port"
        apt_install libnetty-java
    fi
    if ! command -v java >/dev/null 2>&1; then
        echo "setup: installing a Java runtime for ZooKeeper"
        apt_install default-jre-headless
    fi

    if ! command -v kcat >/dev/null 2>&1; then
        echo "setup: installing Debian's kcat"
        apt_install kcat
    fi
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "setup: installing Debian's nodejs and npm (for kafkajs)"
        apt_install nodejs npm
    fi
    if [ ! -f tests/kafka/js/node_modules/kafkajs/package.json ]; then
        echo "setup: installing kafkajs (npm ci, tests/kafka/js)"
        (cd tests/kafka/js && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    fi
    if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
        echo "setup: installing Debian's Chromium and its driver for the console's browser tests"
        apt_install chromium chromium-driver
    fi
}

if [ "$venv_only" -eq 0 ]; then
    system_packages
fi

PYTHON=${PYTHON:-python3.11}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "setup: $PYTHON not found (odradek needs Python 3.11 or newer)" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'
