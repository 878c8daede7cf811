#!/usr/bin/env bash
# Runs end-to-end suites (tests/server/e2e, tests/fleet/e2e) against the real cellserve binary:
#   tests/e2e/run.sh SUITE.test.mjs...   (each a path; the suites run from their own folder)
# Skips (exit 77) when node, the npm packages (tests/node_modules; scripts/setup installs them)
# or the shared test data are missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
suites=()
for suite in "$@"; do suites+=("$(realpath "$suite")"); done
if ! command -v node > /dev/null; then echo "SKIP: node is not installed (scripts/setup)"; exit 77; fi
if [[ ! -f $here/../node_modules/openai/package.json ]]; then echo "SKIP: npm packages missing: run scripts/setup"; exit 77; fi
if [[ ! -d ${CELLSERVE_TESTDATA:-/nonexistent}/models ]]; then echo "SKIP: shared testdata is absent"; exit 77; fi
cd "$(dirname "${suites[0]}")"
exec node --test --test-concurrency=1 "${suites[@]}"
