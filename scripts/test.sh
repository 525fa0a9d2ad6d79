#!/usr/bin/env bash
# Sets up everything (see setup.sh) and runs every test: unit, integration against a real
# kube-apiserver + etcd, and end to end with the real Flux controllers, under Node 24.
# Ends with one plain "vitest: N passed, N failed" line.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
results=$(mktemp)
trap 'rm -f "$results"' EXIT
status=0
npm test --silent -- --reporter=default --reporter=json --outputFile.json="$results" || status=$?
node_modules/.bin/node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))
  console.log(`vitest: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`)
' "$results" || echo "vitest: no results written (exit $status)"
exit "$status"
