#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing (scripts/setup.sh: the
# packages and the virtualenv; scripts/docker-setup.sh: the Docker engine and the images the
# container fault suite runs), then lint, format, types, layering and every test. Fails on the
# first failing step.
#
# --quick (anywhere among the arguments): the quick tier, a few minutes. Only the virtualenv is
# set up (scripts/setup.sh --venv-only), then ruff, ruff format --check, mypy, the import-layering
# contracts and the unit and property tests (tests/unit, tests/property): no Debian package,
# Docker, ZooKeeper, node process or browser. Every other argument goes to pytest in either
# tier (e.g. -x, -k door, or paths: given paths replace the tier's).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
pytest_args=()
for arg in "$@"; do
    if [ "$arg" = "--quick" ]; then
        quick=1
    else
        pytest_args+=("$arg")
    fi
done

if [ "$quick" -eq 1 ]; then
    bash scripts/setup.sh --venv-only
else
    bash scripts/setup.sh
    bash scripts/docker-setup.sh
fi
export PATH="$PWD/.venv/bin:$PATH"

if [ "$quick" -eq 0 ]; then
    echo "== genproto --check"; bash scripts/genproto.sh --check
fi
echo "== ruff check";   ruff check .
echo "== ruff format";  ruff format --check .
echo "== mypy";         mypy
echo "== import-linter"; lint-imports
if [ "$quick" -eq 1 ]; then
    # the tier's tests by default (pytest's testpaths), as the whole run's are tests/
    echo "== pytest (unit, property)"
    pytest -o testpaths="tests/unit tests/property" "${pytest_args[@]}"
else
    # the slowest tests listed at the end: where the suite's time goes
    echo "== pytest";   pytest --durations=25 "${pytest_args[@]}"
fi
