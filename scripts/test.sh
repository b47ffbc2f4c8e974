#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing (scripts/setup.sh: the
# packages and the virtualenv; scripts/docker-setup.sh: the Docker engine and the images the
# container fault suite runs), then lint, format, types, layering and every test. Fails on the
# first failing step.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/docker-setup.sh
export PATH="$PWD/.venv/bin:$PATH"

echo "== genproto --check"; bash scripts/genproto.sh --check
echo "== ruff check";   ruff check .
echo "== ruff format";  ruff format --check .
echo "== mypy";         mypy
echo "== import-linter"; lint-imports
echo "== pytest";       pytest "$@"
