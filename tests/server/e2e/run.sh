#!/usr/bin/env bash
# Runs the end-to-end suites against a real `cellserve serve`. Skips (exit 77) when node, the
# npm packages (scripts/setup installs them) or the shared test data are missing.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v node > /dev/null; then echo "SKIP: node is not installed (scripts/setup)"; exit 77; fi
if [[ ! -f node_modules/openai/package.json ]]; then echo "SKIP: npm packages missing: run scripts/setup"; exit 77; fi
if [[ ! -d ${CELLSERVE_TESTDATA:-/nonexistent}/models ]]; then echo "SKIP: shared testdata is absent"; exit 77; fi
exec node --test --test-concurrency=1 "$@"
