#!/usr/bin/env bash
# Sets up everything (see setup.sh) and runs the demo: the bundled action, end to end,
# against a local cluster with the real Flux controllers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec npm run --silent demo
