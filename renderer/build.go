package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	flux "github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"
)

// buildRequest is the kustomize half of a Flux Kustomization's build: the kustomization.yaml
// kustomize-controller generates, then kustomize on a filesystem confined to the source root.
type buildRequest struct {
	// Root is the source's root in the sandbox filesystem (the artifact kustomize-controller unpacks).
	Root string `json:"root"`
	// Path is spec.path, relative to Root.
	Path string `json:"path"`
	// Kustomization is the Flux Kustomization object (apiVersion, kind, metadata, spec).
	Kustomization map[string]any `json:"kustomization"`
}

type buildAnswer struct {
	// YAML is kustomize's output, each object with its origin annotation.
	YAML string `json:"yaml,omitempty"`
	// Error is why the build failed; Remote is the remote reference it needed, when that is why.
	Error  string `json:"error,omitempty"`
	Remote string `json:"remote,omitempty"`
	// Partial is the output of the build without its remote references (Remote is set), so the
	// host can still follow the Flux Kustomizations it defines.
	Partial string `json:"partial,omitempty"`
}

// A build that needs several remote references is retried without each, up to this many.
const maxDropped = 16

// build is kustomize-controller's generate and build steps (internal/controller/kustomization_controller.go).
// Its errors name files by their path in the source, as the user wrote them.
func build(req buildRequest) buildAnswer {
	answer := buildIn(req)
	if answer.Error != "" {
		answer.Error = strings.ReplaceAll(strings.ReplaceAll(answer.Error, req.Root+"/", ""), req.Root, ".")
	}
	return answer
}

func buildIn(req buildRequest) buildAnswer {
	dirPath := filepath.Join(req.Root, req.Path)
	if err := generate(unstructured.Unstructured{Object: req.Kustomization}, req.Root, dirPath); err != nil {
		return buildAnswer{Error: err.Error()}
	}
	fs, err := securefs.MakeFsOnDiskSecure(req.Root)
	if err != nil {
		return buildAnswer{Error: err.Error()}
	}
	m, failure := run(fs, dirPath, nil)
	if failure == nil {
		return encoded(m)
	}
	answer := buildAnswer{Error: failure.message, Remote: failure.remote}
	// Without its remote references the build may still show which Kustomizations it defines.
	dropped := []string{}
	for failure != nil && failure.remote != "" && len(dropped) < maxDropped {
		dropped = append(dropped, failure.remote)
		m, failure = run(fs, dirPath, dropped)
	}
	if failure == nil {
		answer.Partial = encoded(m).YAML
	}
	return answer
}

type buildFailure struct {
	message string
	remote  string
}

// run is fluxcd/pkg/kustomize's Build with the same options, and the OpenAPI reset it does around
// each build done only after a build that named a schema: re-reading the embedded schema costs
// hundreds of milliseconds in WebAssembly, and only such a build can change it.
func run(fs filesys.FileSystem, dirPath string, dropped []string) (m resmap.ResMap, failure *buildFailure) {
	remote.reset()
	watched := &readWatch{FileSystem: fs, dropped: dropped}
	defer func() {
		if r := recover(); r != nil {
			failure = &buildFailure{message: fmt.Sprintf("recovered from kustomize build panic: %v", r)}
		}
		if watched.schema {
			openapi.ResetOpenAPI()
		}
		if failure != nil {
			failure.remote = remote.reference(failure.message)
		}
	}()
	k := krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
	m, err := k.Run(watched, dirPath)
	if err != nil {
		return nil, &buildFailure{message: fmt.Sprintf("kustomize build failed: %v", err)}
	}
	return m, nil
}

func encoded(m resmap.ResMap) buildAnswer {
	data, err := m.AsYaml()
	if err != nil {
		return buildAnswer{Error: fmt.Sprintf("kustomize build failed: %v", err)}
	}
	return buildAnswer{YAML: string(data)}
}

// generate writes the kustomization.yaml kustomize-controller builds (Flux's generator), asking
// kustomize for origin annotations too: they tell the host which file each object came from.
func generate(obj unstructured.Unstructured, root, dirPath string) error {
	manifest, kfile, _, err := flux.NewGenerator(root, obj).GenerateManifest(dirPath)
	if err != nil {
		return err
	}
	var kus kustypes.Kustomization
	if err := yaml.Unmarshal(manifest, &kus); err != nil {
		return err
	}
	if !contains(kus.BuildMetadata, kustypes.OriginAnnotations) {
		kus.BuildMetadata = append(kus.BuildMetadata, kustypes.OriginAnnotations)
	}
	out, err := yaml.Marshal(kus)
	if err != nil {
		return err
	}
	return os.WriteFile(kfile, out, 0o644)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
