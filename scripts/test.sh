#!/usr/bin/env bash
# Sets up everything (see setup.sh) and runs every test: unit, integration against a real
# kube-apiserver + etcd, and end to end with the real Flux controllers, under Node 24; then the
# end-to-end tests again on each other Flux the repository pins (test/cluster/flux-<version>); then
# our workflows under a real Actions runner (act, the `act` project) as a pass of its own.
# Ends with one "vitest: N passed, N failed" line per pass and one for the whole.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
status=0
npm test --silent -- --project '!act' --reporter=default --reporter=json --outputFile.json="$results/default.json" || status=$?
for dir in test/cluster/flux-*/; do
  flux=$(basename "$dir"); flux=${flux#flux-}
  echo "== the end-to-end tests on Flux $flux =="
  HELMRELEASE_TRIGGER_FLUX=$flux npm test --silent -- --project cluster __tests__/e2e \
    --reporter=default --reporter=json --outputFile.json="$results/flux-$flux.json" || status=$?
done
echo "== our workflows under act =="
npm test --silent -- --project act --reporter=default --reporter=json --outputFile.json="$results/act.json" || status=$?
node_modules/.bin/node -e '
  const fs = require("fs"), path = require("path")
  const dir = process.argv[1]
  const line = (r) => `${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`
  const total = { numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, numTodoTests: 0 }
  for (const file of fs.readdirSync(dir).sort()) {
    const r = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"))
    const name = file === "default.json" ? "every test, the default Flux" : file === "act.json" ? "act" : `the end-to-end tests, Flux ${file.slice(5, -5)}`
    console.log(`vitest (${name}): ${line(r)}`)
    for (const k of Object.keys(total)) total[k] += r[k]
  }
  console.log(`vitest: ${line(total)}`)
' "$results" || echo "vitest: no results written (exit $status)"
exit "$status"
