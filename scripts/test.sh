#!/usr/bin/env bash
# Sets up everything (see setup.sh) and runs every test: unit, integration against a real
# kube-apiserver + etcd, and end to end with the real Flux controllers, under Node 24.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec npm test --silent
