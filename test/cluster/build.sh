#!/usr/bin/env bash
# Builds the local cluster's binaries (kube-apiserver, etcd, source-controller,
# helm-controller, kustomize-controller, the OCI registry), kustomize and the test tools sops and age-keygen from
# their Go modules and caches them outside the clone, keyed by a hash of the wrapper
# module that pins them. A cached build is reused as is.
#
# Also builds actionlint (target `actionlint`, not a cluster binary: .ci/run lints the workflows
# with it) and act (target `act`: the act tests run our workflows under it), cached the same way.
#
# Also builds the helm CLI (target `helm`): the oracle of the sandbox's helmTemplate in the
# differential test, cached the same way.
#
# Usage: test/cluster/build.sh [--print-paths] [kube|source-controller|helm-controller|kustomize-controller|registry|kustomize|helm|sops|actionlint|act ...]
# Prints nothing but progress on stderr; the cache directory is
# ${HELMRELEASE_TRIGGER_CACHE:-$HOME/.cache/helmrelease-trigger}/bin.
# With --print-paths it builds nothing and prints one `binary=path` line per
# binary of the targets (the path the build puts it at, present or not).
#
# The Flux controllers are the default Flux's (test/cluster/<controller>); with
# HELMRELEASE_TRIGGER_FLUX=<version> they are that Flux's (test/cluster/flux-<version>/<controller>).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${HELMRELEASE_TRIGGER_CACHE:-$HOME/.cache/helmrelease-trigger}
export GOTOOLCHAIN=local
# The pinned go.sum is complete: a build never rewrites it (and needs no checksum database).
export GOFLAGS=-mod=readonly

# The kube-apiserver reports this version; clients and Helm read it.
# The pin sits either on a one-line `require` or inside a `require (` block.
k8s_version=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "k8s.io/kubernetes" { print $2; exit }' "$here/kube/go.mod")
case "$k8s_version" in
  v[0-9]*.[0-9]*.[0-9]*) ;;
  *) echo "cluster build: cannot read the k8s.io/kubernetes version from test/cluster/kube/go.mod" >&2; exit 2 ;;
esac

flux=${HELMRELEASE_TRIGGER_FLUX:-}
if [ -n "$flux" ] && [ ! -d "$here/flux-$flux" ]; then
  echo "cluster build: HELMRELEASE_TRIGGER_FLUX=$flux has no test/cluster/flux-$flux (there are: $(cd "$here" && ls -d flux-* 2>/dev/null | tr '\n' ' '))" >&2
  exit 2
fi
controller() { # the wrapper of a Flux controller for the chosen Flux
  if [ -n "$flux" ]; then echo "flux-$flux/$1"; else echo "$1"; fi
}

key_of() { # the wrapper's files, hashed: any change to a pin rebuilds
  (cd "$here/$1" && find . -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) | sort | xargs sha256sum; go version) | sha256sum | cut -c1-16
}

print_paths=false
stamped() { # $1 binary, $2 text its --version must print ("" = no check)
  [ -z "$2" ] || "$1" --version 2>/dev/null | grep -qF "$2"
}

build() { # $1 wrapper, $2 output name, $3 package, $4 ldflags, $5 expected --version text
  local wrapper=$1 name=$2 pkg=$3 ldflags=${4:-} version=${5:-}
  local key out
  key=$(key_of "$wrapper")
  out="$cache/bin/$wrapper-$key"
  if $print_paths; then
    echo "$name=$out/$name"
    return
  fi
  # A binary whose version stamp is wrong (an older build.sh) is rebuilt; with
  # the compile cache warm that is only a relink.
  if [ -x "$out/$name" ] && stamped "$out/$name" "$version"; then
    echo "cluster build: $name cached ($out)" >&2
    return
  fi
  echo "cluster build: building $name from $wrapper (first build takes minutes)" >&2
  local start=$SECONDS tmp="$out.tmp.$$"
  mkdir -p "$tmp"
  if ! (cd "$here/$wrapper" && go build -trimpath -ldflags "-s -w $ldflags" -o "$tmp/$name" "$pkg"); then
    rm -rf "$tmp"
    echo "cluster build: FAILED to build $name from test/cluster/$wrapper (see the go output above)" >&2
    exit 1
  fi
  if ! stamped "$tmp/$name" "$version"; then
    rm -rf "$tmp"
    echo "cluster build: $name built but its --version does not report $version (check the -X ldflags in build.sh)" >&2
    exit 1
  fi
  # Several binaries share one wrapper: each lands in the keyed directory by an
  # atomic rename, so an interrupted build never leaves a half-written binary.
  mkdir -p "$out"; mv "$tmp/$name" "$out/$name"; rm -rf "$tmp"
  echo "cluster build: $name built in $((SECONDS - start))s" >&2
}

if [ "${1:-}" = --print-paths ]; then print_paths=true; shift; fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kube source-controller helm-controller kustomize-controller registry sops)
for t in "${targets[@]}"; do
  case "$t" in
    kube)
      v=${k8s_version#v}
      major=${v%%.*}; rest=${v#*.}; minor=${rest%%.*}
      vpkg=k8s.io/component-base/version
      ld="-X $vpkg.gitVersion=$k8s_version -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
      # client-go carries its own copy of the version variables.
      ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"
      build kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ld" "Kubernetes $k8s_version"
      build kube etcd ./etcd
      ;;
    source-controller) build "$(controller source-controller)" source-controller github.com/fluxcd/source-controller ;;
    helm-controller) build "$(controller helm-controller)" helm-controller github.com/fluxcd/helm-controller ;;
    kustomize-controller) build "$(controller kustomize-controller)" kustomize-controller github.com/fluxcd/kustomize-controller ;;
    # go-containerregistry's in-memory registry: no --version to check.
    registry) build registry oci-registry github.com/google/go-containerregistry/cmd/registry ;;
    sops)
      # No --version check: sops's asks GitHub for its latest release, and age-keygen
      # built as a dependency prints "(devel)".
      build sops sops github.com/getsops/sops/v3/cmd/sops
      build sops age-keygen filippo.io/age/cmd/age-keygen
      ;;
    actionlint)
      al_version=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "github.com/rhysd/actionlint" { print $2; exit }' "$here/actionlint/go.mod")
      build actionlint actionlint github.com/rhysd/actionlint/cmd/actionlint "-X github.com/rhysd/actionlint.version=$al_version" "$al_version"
      ;;
    act)
      # act prints its version stamp (main.version) for --version; the pin is in go.mod.
      act_version=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "github.com/nektos/act" { print $2; exit }' "$here/act/go.mod")
      build act act github.com/nektos/act "-X main.version=${act_version#v}" "${act_version#v}"
      ;;
    kustomize)
      # `kustomize version` reads the stamp; the module version is the pin in go.mod.
      kv=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "sigs.k8s.io/kustomize/kustomize/v5" { print $2; exit }' "$here/kustomize/go.mod")
      build kustomize kustomize sigs.k8s.io/kustomize/kustomize/v5 "-X sigs.k8s.io/kustomize/api/provenance.version=$kv"
      ;;
    helm)
      # Stamped as Helm's Makefile stamps a release (`helm version` prints it); helm has no --version.
      hv=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "helm.sh/helm/v4" { print $2; exit }' "$here/helm/go.mod")
      build helm helm helm.sh/helm/v4/cmd/helm "-X helm.sh/helm/v4/internal/version.version=$hv -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
      ;;
    *) echo "cluster build: unknown target '$t' (expected kube, source-controller, helm-controller, kustomize-controller, registry, kustomize, helm, sops, actionlint or act)" >&2; exit 2 ;;
  esac
done
