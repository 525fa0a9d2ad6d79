package main

import (
	"fmt"
	"sort"
	"strings"

	fluxkustomize "github.com/fluxcd/pkg/apis/kustomize"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// A HelmRelease's spec.postRenderers entry (helm-controller's v2 API: kustomize patches and images).
type postRenderer struct {
	Kustomize *struct {
		Patches []fluxkustomize.Patch `json:"patches,omitempty"`
		Images  []fluxkustomize.Image `json:"images,omitempty"`
	} `json:"kustomize,omitempty"`
}

type commonMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// A post-render step takes a stream of documents and gives one back.
type postRenderStep func(manifests []byte) ([]byte, error)

// postRenderChain is helm-controller's (internal/postrender): each postRenderers kustomize in
// order, then commonMetadata, then the origin labels, which win over commonMetadata's on a clash.
func postRenderChain(req helmTemplateRequest) []postRenderStep {
	var chain []postRenderStep
	for _, r := range req.PostRenderers {
		if r.Kustomize != nil {
			chain = append(chain, kustomizeStep(r.Kustomize.Patches, r.Kustomize.Images))
		}
	}
	if m := req.CommonMetadata; m != nil {
		var transformers []resmap.Transformer
		if m.Labels != nil {
			transformers = append(transformers, labels(m.Labels))
		}
		if m.Annotations != nil {
			transformers = append(transformers, &builtins.AnnotationsTransformerPlugin{
				Annotations: m.Annotations,
				FieldSpecs:  []kustypes.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}},
			})
		}
		if len(transformers) > 0 {
			chain = append(chain, transformStep(transformers...))
		}
	}
	origin := map[string]string{"helm.toolkit.fluxcd.io/name": req.Owner.Name, "helm.toolkit.fluxcd.io/namespace": req.Owner.Namespace}
	return append(chain, transformStep(labels(origin)))
}

func labels(values map[string]string) resmap.Transformer {
	return &builtins.LabelTransformerPlugin{
		Labels:     values,
		FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}},
	}
}

// kustomizeStep builds a kustomization of the stream and the patches and images, in memory,
// plugins off: nothing is read but the stream.
func kustomizeStep(patches []fluxkustomize.Patch, images []fluxkustomize.Image) postRenderStep {
	return func(manifests []byte) ([]byte, error) {
		fs := filesys.MakeFsInMemory()
		config := kustypes.Kustomization{TypeMeta: kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind}}
		config.Resources = []string{"helm-output.yaml"}
		for _, image := range images {
			config.Images = append(config.Images, kustypes.Image{Name: image.Name, NewName: image.NewName, NewTag: image.NewTag, Digest: image.Digest})
		}
		for _, patch := range patches {
			entry := kustypes.Patch{Patch: patch.Patch}
			if t := patch.Target; t != nil {
				selector := &kustypes.Selector{LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
				selector.Gvk.Group, selector.Gvk.Version, selector.Gvk.Kind = t.Group, t.Version, t.Kind
				selector.Name, selector.Namespace = t.Name, t.Namespace
				entry.Target = selector
			}
			config.Patches = append(config.Patches, entry)
		}
		kustomization, err := yaml.Marshal(config)
		if err != nil {
			return nil, err
		}
		if err := fs.WriteFile("helm-output.yaml", manifests); err != nil {
			return nil, err
		}
		if err := fs.WriteFile("kustomization.yaml", kustomization); err != nil {
			return nil, err
		}
		options := &krusty.Options{LoadRestrictions: kustypes.LoadRestrictionsNone, PluginConfig: kustypes.DisabledPluginConfig()}
		resources, err := krusty.MakeKustomizer(options).Run(fs, ".")
		if err != nil {
			return nil, err
		}
		return resources.AsYaml()
	}
}

func transformStep(transformers ...resmap.Transformer) postRenderStep {
	return func(manifests []byte) ([]byte, error) {
		factory := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory())
		resources, err := factory.NewResMapFromBytes(manifests)
		if err != nil {
			return nil, err
		}
		for _, t := range transformers {
			if err := t.Transform(resources); err != nil {
				return nil, err
			}
		}
		return resources.AsYaml()
	}
}

// Helm marks each document with the file it came from, so the post-rendered stream can be split
// back into files (and hooks told apart) after the post-renderers.
const filenameAnnotation = "postrenderer.helm.sh/postrender-filename"

func postRenderGroup(files map[string]string, chain []postRenderStep, group string) (map[string]string, error) {
	stream, err := annotateAndMerge(files)
	if err != nil {
		return nil, err
	}
	out := []byte(stream)
	for _, step := range chain {
		if out, err = step(out); err != nil {
			return nil, err
		}
	}
	return splitAndDeannotate(string(out), group)
}

func annotateAndMerge(files map[string]string) (string, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var nodes []*kyaml.RNode
	for _, name := range names {
		content := files[name]
		base := name[strings.LastIndex(name, "/")+1:]
		if strings.HasPrefix(base, "_") || strings.TrimSpace(content) == "" {
			continue
		}
		split := releaseutil.SplitManifests(content)
		keys := make([]string, 0, len(split))
		for key := range split {
			keys = append(keys, key)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, key := range keys {
			if strings.TrimSpace(split[key]) == "" {
				continue
			}
			docs, err := kio.ParseAll(split[key])
			if err != nil {
				return "", fmt.Errorf("parsing %s: %w", name, err)
			}
			for _, doc := range docs {
				if err := doc.PipeE(kyaml.SetAnnotation(filenameAnnotation, name)); err != nil {
					return "", fmt.Errorf("annotating %s: %w", name, err)
				}
				nodes = append(nodes, doc)
			}
		}
	}
	return kio.StringAll(nodes)
}

func splitAndDeannotate(stream, group string) (map[string]string, error) {
	docs, err := kio.ParseAll(stream)
	if err != nil {
		return nil, fmt.Errorf("error parsing YAML: %w", err)
	}
	byFile := map[string][]*kyaml.RNode{}
	for i, doc := range docs {
		name := doc.GetAnnotations()[filenameAnnotation]
		if name == "" {
			if group == "" {
				name = fmt.Sprintf("generated-by-postrender-%d.yaml", i)
			} else {
				name = fmt.Sprintf("generated-by-postrender-%s-%d.yaml", group, i)
			}
		}
		if err := doc.PipeE(kyaml.ClearAnnotation(filenameAnnotation)); err != nil {
			return nil, err
		}
		byFile[name] = append(byFile[name], doc)
	}
	files := make(map[string]string, len(byFile))
	for name, nodes := range byFile {
		text, err := kio.StringAll(nodes)
		if err != nil {
			return nil, err
		}
		files[name] = text
	}
	return files, nil
}
