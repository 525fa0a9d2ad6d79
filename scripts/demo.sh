#!/usr/bin/env bash
# Sets up what the demo starts (setup.sh --demo) and runs it: the bundled action, end to end,
# against a local cluster with the real Flux controllers.
set -euo pipefail
cd "$(dirname "$0")/.."

# The first line says what the first run builds and how long that takes.
missing=$(test/cluster/build.sh --print-paths kube source-controller kustomize-controller helm-controller |
  while IFS='=' read -r name path; do [ -x "$path" ] || printf '%s ' "$name"; done)
if [ -n "$missing" ]; then
  echo "demo: the first run builds ${missing}from their Go modules and installs the npm packages: about 24 minutes on 2 cores (Go's compiler is the limit), cached under ~/.cache after that; the demo itself takes under a minute."
elif [ ! -x node_modules/.bin/node ]; then
  echo "demo: installing the npm packages first (about a minute); the demo itself takes under a minute."
else
  echo "demo: everything is built; the demo takes under a minute."
fi
scripts/setup.sh --demo
exec npm run --silent demo
