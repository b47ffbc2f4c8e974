#!/usr/bin/env bash
# Installs everything odradek's tests need on a fresh machine: a virtualenv in .venv with the
# project (editable) and its development tools. Safe to run again; it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

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
