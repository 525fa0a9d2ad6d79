#!/usr/bin/env bash
# Lints every workflow we ship (.github/workflows and examples/) with actionlint, built from its
# Go module by test/cluster/build.sh and cached beside the cluster binaries. shellcheck and
# pyflakes are not used (their checks are not part of this project's pins).
set -euo pipefail
cd "$(dirname "$0")/.."
test/cluster/build.sh actionlint
bin=$(test/cluster/build.sh --print-paths actionlint | sed -n 's/^actionlint=//p')
exec "$bin" -shellcheck= -pyflakes= .github/workflows/*.yml examples/*.yml
