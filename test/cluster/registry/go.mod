// Wrapper module that builds go-containerregistry's in-memory OCI registry (cmd/registry)
// from its published module: the loopback registry source-controller's OCIRepository
// fetches Helm charts from. Nothing of its source lives here: only the version pin.
module helmrelease-trigger.local/cluster/registry

go 1.24.0

require github.com/google/go-containerregistry v0.20.6 // indirect
