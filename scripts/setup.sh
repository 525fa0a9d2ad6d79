#!/usr/bin/env bash
# Installs what the tests and the demo need, from scratch on a fresh machine and as a
# no-op when nothing changed: npm packages (Node 24 among them, from the node@24 package),
# the sandboxed renderer and the local cluster's Go-built binaries, the helm CLI (the oracle of the
# differential test of helmTemplate), the sops/age test tools and
# act, the Actions runner the act tests run our workflows under (cached under ~/.cache, keyed by
# their pins).
#
#   scripts/setup.sh          everything the tests need
#   scripts/setup.sh --demo   only what the demo starts: npm packages, kube-apiserver, etcd and
#                             the default Flux's source-, kustomize- and helm-controller
#
# The Go builds run side by side, as many at once as the machine has cores, while npm installs.
set -euo pipefail
cd "$(dirname "$0")/.."

demo=false
case "${1:-}" in
  --demo) demo=true ;;
  '') ;;
  *) echo "setup: unknown argument '$1' (use --demo for the demo's part only)." >&2; exit 2 ;;
esac

command -v go >/dev/null || { echo "setup: Go is required to build the local cluster (kube-apiserver, etcd, Flux controllers)." >&2; exit 1; }
command -v npm >/dev/null || { echo "setup: npm (Node.js 20 or newer) is required." >&2; exit 1; }

# `<flux>:<target>` per build (an empty flux: the default Flux); the longest first.
builds=(:kube :source-controller :helm-controller :kustomize-controller)
if ! $demo; then
  builds+=(:registry :kustomize :helm :sops :act)
  # The other Flux versions the end-to-end tests also run on (scripts/test.sh).
  for dir in test/cluster/flux-*/; do
    flux=$(basename "$dir"); flux=${flux#flux-}
    builds+=("$flux:source-controller" "$flux:helm-controller" "$flux:kustomize-controller")
  done
fi
# Go's "downloading <module>" lines (hundreds on a first run) go to the log only.
log_dir=${XDG_CACHE_HOME:-$HOME/.cache}/helmrelease-trigger
mkdir -p "$log_dir"
printf '%s\n' "${builds[@]}" |
  xargs -P "$(nproc)" -I{} bash -c 'HELMRELEASE_TRIGGER_FLUX=${1%%:*} exec test/cluster/build.sh "${1#*:}"' _ {} 2>&1 |
  tee "$log_dir/setup-go.log" | { grep --line-buffered -v '^go: downloading ' || true; } >&2 &
go_builds=$!

# npm ci only when package-lock.json changed since the last install.
stamp=node_modules/.package-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -x node_modules/.bin/node ]; then
  echo "setup: installing npm packages" >&2
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
node_modules/.bin/node --version | grep -q '^v24\.' || { echo "setup: node_modules/.bin/node is not Node 24; delete node_modules and rerun." >&2; exit 1; }

# Debian's Chromium and an emoji font: the rendering test and the demo's screenshot lay the job
# summary, check and comment out in a real browser.
if [ ! -x /usr/bin/chromium ] || [ ! -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ]; then
  echo "setup: installing chromium and fonts-noto-color-emoji" >&2
  sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null
fi

if ! $demo; then
  # The Node releases the packed CLI is tested on (__tests__/local/node-versions.test.ts), from
  # the node@<version> npm packages, cached by exact version under ~/.cache.
  for version in $(node -p "require('./test/support/node-versions.json').join(' ')"); do
    dir="$HOME/.cache/helmrelease-trigger/node/$version"
    if [ ! -x "$dir/node_modules/.bin/node" ]; then
      echo "setup: installing Node $version for the packed-CLI test" >&2
      npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "node@$version"
    fi
  done

  # The sandboxed renderer (renderer/, Go → WebAssembly), cached by its inputs: the dist/ freshness
  # test compares the committed dist/renderer.wasm.br with it.
  node_modules/.bin/node scripts/renderer.mjs
fi

wait "$go_builds" || { echo "setup: building the local cluster failed (see the 'cluster build' lines above; Go's whole output is in $log_dir/setup-go.log)." >&2; exit 1; }
