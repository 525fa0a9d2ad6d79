package main

import (
	"bytes"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// readWatch is the build's filesystem as kustomize reads it: it notes a kustomization that names
// an OpenAPI schema, and can leave given remote references out of every kustomization file.
type readWatch struct {
	filesys.FileSystem
	dropped []string
	schema  bool
}

func (w *readWatch) ReadFile(path string) ([]byte, error) {
	data, err := w.FileSystem.ReadFile(path)
	if err != nil || !contains(konfig.RecognizedKustomizationFileNames(), filepath.Base(path)) {
		return data, err
	}
	if bytes.Contains(data, []byte("openapi")) {
		w.schema = true
	}
	if len(w.dropped) == 0 {
		return data, nil
	}
	return withoutReferences(data, w.dropped), nil
}

// Fields of a kustomization that list paths, and those whose entries carry one in `path`.
var (
	pathLists   = []string{"resources", "bases", "components", "crds", "configurations", "generators", "transformers", "validators", "patchesStrategicMerge"}
	pathEntries = []string{"patches", "patchesJson6902", "replacements"}
	generators  = []string{"configMapGenerator", "secretGenerator"}
)

// withoutReferences is a kustomization file with every entry naming one of refs left out; a file
// that does not parse is returned as it is (the build reports it).
func withoutReferences(data []byte, refs []string) []byte {
	var k map[string]any
	if yaml.Unmarshal(data, &k) != nil || k == nil {
		return data
	}
	named := func(v any) bool {
		s, ok := v.(string)
		if !ok {
			return false
		}
		if i := strings.Index(s, "="); i >= 0 && !contains(refs, s) {
			s = s[i+1:]
		}
		return contains(refs, s)
	}
	keep := func(list any, drop func(any) bool) any {
		items, ok := list.([]any)
		if !ok {
			return list
		}
		out := []any{}
		for _, item := range items {
			if !drop(item) {
				out = append(out, item)
			}
		}
		return out
	}
	for _, field := range pathLists {
		if v, ok := k[field]; ok {
			k[field] = keep(v, named)
		}
	}
	for _, field := range pathEntries {
		if v, ok := k[field]; ok {
			k[field] = keep(v, func(item any) bool {
				entry, ok := item.(map[string]any)
				return ok && named(entry["path"])
			})
		}
	}
	for _, field := range generators {
		items, ok := k[field].([]any)
		if !ok {
			continue
		}
		for _, item := range items {
			entry, ok := item.(map[string]any)
			if !ok {
				continue
			}
			for _, list := range []string{"files", "envs"} {
				if v, ok := entry[list]; ok {
					entry[list] = keep(v, named)
				}
			}
			if named(entry["env"]) {
				delete(entry, "env")
			}
		}
	}
	if openapi, ok := k["openapi"].(map[string]any); ok && named(openapi["path"]) {
		delete(k, "openapi")
	}
	out, err := yaml.Marshal(k)
	if err != nil {
		return data
	}
	return out
}
