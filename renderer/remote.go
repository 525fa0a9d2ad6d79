package main

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// There is no network in the sandbox: wasip1 has no way to open a connection. kustomize reads
// remote files through Go's default HTTP transport; this one refuses at once and remembers the
// URL, so the host can say which reference a build needed. Remote git bases fail earlier still,
// kustomize finding no git to run.
type refusingTransport struct{}

var errNoNetwork = errors.New("the sandboxed renderer has no network: remote references are not fetched")

func (refusingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	remote.note(req.URL.String())
	return nil, errNoNetwork
}

func init() {
	http.DefaultTransport = refusingTransport{}
	http.DefaultClient = &http.Client{Transport: refusingTransport{}}
}

type remoteLog struct {
	mu    sync.Mutex
	first string
}

var remote remoteLog

func (r *remoteLog) reset() {
	r.mu.Lock()
	r.first = ""
	r.mu.Unlock()
}

func (r *remoteLog) note(url string) {
	r.mu.Lock()
	if r.first == "" {
		r.first = url
	}
	r.mu.Unlock()
}

// kustomize names each resource it was accumulating, the innermost last; a git base fails
// where it looks for git to run. (Go's regexp runs in linear time, whatever the text.)
var accumulating = regexp.MustCompile(`accumulating resources from '([^']+)'`)

// reference is the remote reference a failed build needed: the URL fetched, or the git base named.
func (r *remoteLog) reference(err string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first != "" {
		return r.first
	}
	if !strings.Contains(err, "no 'git' program") {
		return ""
	}
	if all := accumulating.FindAllStringSubmatch(err, -1); len(all) > 0 {
		return all[len(all)-1][1]
	}
	return ""
}
