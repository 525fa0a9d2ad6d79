// The sandboxed renderer: Flux's own kustomize code and Helm's template engine (helm.go) compiled to
// WebAssembly (wasip1) and run in-process by the TypeScript host (src/sandbox/). It is a reactor:
// the host calls _initialize once, then hrt_call for each request. A request and its answer are
// JSON; the files a build reads are in the host's in-memory WASI filesystem, which holds nothing
// but the source tree the host put there. There is no network and no process to start in wasip1:
// a build that names a remote reference fails, and the answer names the reference.
package main

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

func main() {}

// Buffers handed to the host, kept reachable until it frees them.
var pinned = map[uintptr][]byte{}

//go:wasmexport hrt_alloc
func hrtAlloc(size uint32) uint32 {
	buf := make([]byte, size)
	if size == 0 {
		buf = make([]byte, 1)
	}
	ptr := uintptr(unsafe.Pointer(&buf[0]))
	pinned[ptr] = buf
	return uint32(ptr)
}

//go:wasmexport hrt_free
func hrtFree(ptr uint32) {
	delete(pinned, uintptr(ptr))
}

// hrt_call takes a request the host wrote into a buffer from hrt_alloc and returns the answer's
// pointer (high 32 bits) and length (low 32 bits); the host frees both buffers.
//
//go:wasmexport hrt_call
func hrtCall(ptr, size uint32) uint64 {
	request := pinned[uintptr(ptr)][:size]
	answer := handle(request)
	out := hrtAlloc(uint32(len(answer)))
	copy(pinned[uintptr(out)], answer)
	return uint64(out)<<32 | uint64(len(answer))
}

// A request names one operation and carries its input; the answer carries its output or an error.
type envelope struct {
	Op        string               `json:"op"`
	Build     *buildRequest        `json:"build,omitempty"`
	PostBuild *postBuildRequest    `json:"postBuild,omitempty"`
	Helm      *helmTemplateRequest `json:"helmTemplate,omitempty"`
	Version   *chartVersionRequest `json:"chartVersion,omitempty"`
}

type reply struct {
	Build     *buildAnswer        `json:"build,omitempty"`
	PostBuild *postBuildAnswer    `json:"postBuild,omitempty"`
	Helm      *helmTemplateAnswer `json:"helmTemplate,omitempty"`
	Version   *chartVersionAnswer `json:"chartVersion,omitempty"`
	Error     string              `json:"error,omitempty"`
}

func handle(request []byte) []byte {
	var in envelope
	var out reply
	if err := json.Unmarshal(request, &in); err != nil {
		out.Error = fmt.Sprintf("the request is not valid JSON: %v", err)
	} else {
		switch {
		case in.Op == "build" && in.Build != nil:
			answer := build(*in.Build)
			out.Build = &answer
		case in.Op == "postBuild" && in.PostBuild != nil:
			answer := postBuild(*in.PostBuild)
			out.PostBuild = &answer
		case in.Op == "helmTemplate" && in.Helm != nil:
			answer := helmTemplate(*in.Helm)
			out.Helm = &answer
		case in.Op == "chartVersion" && in.Version != nil:
			answer := chartVersion(*in.Version)
			out.Version = &answer
		default:
			out.Error = fmt.Sprintf("unknown operation %q, or its input is missing", in.Op)
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return []byte(`{"error":"the answer could not be encoded"}`)
	}
	return data
}
