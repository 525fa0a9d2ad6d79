#!/usr/bin/env bash
# Installs what the tests and the demo need, from scratch on a fresh machine and as a
# no-op when nothing changed: npm packages (Node 24 among them, from the node@24 package),
# the sandboxed renderer and the local cluster's Go-built binaries and the sops/age test tools
# (cached under ~/.cache, keyed by their pins).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "setup: Go is required to build the local cluster (kube-apiserver, etcd, Flux controllers)." >&2; exit 1; }
command -v npm >/dev/null || { echo "setup: npm (Node.js 20 or newer) is required." >&2; exit 1; }

# npm ci only when package-lock.json changed since the last install.
stamp=node_modules/.package-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -x node_modules/.bin/node ]; then
  echo "setup: installing npm packages" >&2
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
node_modules/.bin/node --version | grep -q '^v24\.' || { echo "setup: node_modules/.bin/node is not Node 24; delete node_modules and rerun." >&2; exit 1; }

# The Node releases the packed CLI is tested on (__tests__/local/node-versions.test.ts), from
# the node@<version> npm packages, cached by exact version under ~/.cache.
for version in $(node -p "require('./test/support/node-versions.json').join(' ')"); do
  dir="$HOME/.cache/helmrelease-trigger/node/$version"
  if [ ! -x "$dir/node_modules/.bin/node" ]; then
    echo "setup: installing Node $version for the packed-CLI test" >&2
    npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "node@$version"
  fi
done

# Debian's Chromium: the rendering test looks at the job summary, check and comment in a real browser.
if [ ! -x /usr/bin/chromium ]; then
  echo "setup: installing chromium" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
fi

# The sandboxed renderer (renderer/, Go → WebAssembly), cached by its inputs: the dist/ freshness
# test compares the committed dist/renderer.wasm.br with it.
node_modules/.bin/node scripts/renderer.mjs

test/cluster/build.sh kube source-controller helm-controller kustomize-controller registry kustomize sops
# The other Flux versions the end-to-end tests also run on (scripts/test.sh).
for dir in test/cluster/flux-*/; do
  HELMRELEASE_TRIGGER_FLUX=$(basename "$dir" | sed 's/^flux-//') test/cluster/build.sh source-controller helm-controller kustomize-controller
done
