package main

import (
	"fmt"
	"sort"

	"github.com/Masterminds/semver/v3"
)

// chartVersionRequest picks a chart version from a Helm repository index's entries for one chart
// as source-controller does (Helm's IndexFile.Get on entries sorted newest first): an exact
// match of the requested text first, else the newest that satisfies the constraint ("*" when
// empty); prereleases only when the constraint names one.
type chartVersionRequest struct {
	Versions   []string `json:"versions"`
	Constraint string   `json:"constraint"`
}

type chartVersionAnswer struct {
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

func chartVersion(req chartVersionRequest) chartVersionAnswer {
	text := req.Constraint
	if text == "" {
		text = "*"
	}
	constraint, err := semver.NewConstraint(text)
	if err != nil {
		return chartVersionAnswer{Error: fmt.Sprintf("the version %q is not a semver range: %v", req.Constraint, err)}
	}
	if req.Constraint != "" {
		for _, v := range req.Versions {
			if v == req.Constraint {
				return chartVersionAnswer{Version: v}
			}
		}
	}
	type parsed struct {
		text    string
		version *semver.Version
	}
	var candidates []parsed
	for _, v := range req.Versions {
		if version, err := semver.NewVersion(v); err == nil {
			candidates = append(candidates, parsed{v, version})
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool { return candidates[j].version.LessThan(candidates[i].version) })
	for _, c := range candidates {
		if constraint.Check(c.version) {
			return chartVersionAnswer{Version: c.text}
		}
	}
	return chartVersionAnswer{Error: fmt.Sprintf("no chart version matches %q", text)}
}
