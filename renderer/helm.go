package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/chartutil"
	"github.com/go-logr/logr"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartv2util "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// helmTemplateRequest is one release rendered as helm-controller renders it on install or upgrade:
// the values composed by Flux's own chartutil, Helm's engine with the given capabilities, then
// helm-controller's post-renderers (renderer/helm-postrender.go). Nothing reaches a cluster:
// `lookup` returns empty, and the chart's files are those the host laid out under Root.
type helmTemplateRequest struct {
	// Root holds the chart: a directory of its files, or the archive named by Archive.
	Root    string `json:"root"`
	Archive string `json:"archive,omitempty"`
	// Release is the Helm release: its name and namespace by helm-controller's rule, computed by the host.
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	IsUpgrade bool   `json:"isUpgrade"`
	// Owner is the HelmRelease: valuesFrom reads its namespace; the origin labels name it.
	Owner struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"owner"`
	// Values is spec.values; ValuesFrom spec.valuesFrom, read from Objects (ConfigMaps and
	// Secrets of the owner's namespace as the cluster would hold them).
	Values     map[string]any         `json:"values,omitempty"`
	ValuesFrom []meta.ValuesReference `json:"valuesFrom,omitempty"`
	Objects    []json.RawMessage      `json:"objects,omitempty"`
	// KubeVersion and APIVersions are the Capabilities a template sees; empty: Helm's defaults.
	KubeVersion string   `json:"kubeVersion,omitempty"`
	APIVersions []string `json:"apiVersions,omitempty"`
	// PostRenderers, CommonMetadata and PostRenderStrategy are the HelmRelease's.
	PostRenderers      []postRenderer  `json:"postRenderers,omitempty"`
	CommonMetadata     *commonMetadata `json:"commonMetadata,omitempty"`
	PostRenderStrategy string          `json:"postRenderStrategy,omitempty"`
	// SourceRevision is the chart source's artifact revision when it carries a digest (an OCIRepository:
	// `<tag>@sha256:<hex>` or `sha256:<hex>`): helm-controller then puts the digest's first 12
	// characters in the chart version's build metadata, and refuses a semver tag that is not the
	// chart's version.
	SourceRevision       string `json:"sourceRevision,omitempty"`
	SkipSchemaValidation bool   `json:"skipSchemaValidation,omitempty"`
}

type renderedHook struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	Path     string   `json:"path"`
	Manifest string   `json:"manifest"`
	Events   []string `json:"events"`
	Weight   int      `json:"weight"`
}

type renderedCRD struct {
	Path     string `json:"path"`
	Manifest string `json:"manifest"`
}

type helmTemplateAnswer struct {
	// Manifest is what Helm stores as the release's manifest: post-rendered, no hooks, no CRDs.
	Manifest string         `json:"manifest,omitempty"`
	Hooks    []renderedHook `json:"hooks,omitempty"`
	CRDs     []renderedCRD  `json:"crds,omitempty"`
	Notes    string         `json:"notes,omitempty"`
	// Values are the composed values helm-controller gives Helm (Helm storage's `config`).
	Values map[string]any `json:"values,omitempty"`
	// UsesLookup: a template calls `lookup`, which returns nothing here (no cluster is reachable).
	UsesLookup   bool   `json:"usesLookup,omitempty"`
	ChartName    string `json:"chartName,omitempty"`
	ChartVersion string `json:"chartVersion,omitempty"`
	// Error says why the release cannot be rendered; Stage says where: values, chart or render.
	Error string `json:"error,omitempty"`
	Stage string `json:"stage,omitempty"`
}

func helmTemplate(req helmTemplateRequest) helmTemplateAnswer {
	answer := helmTemplateIn(req)
	if answer.Error != "" && req.Root != "" {
		answer.Error = strings.ReplaceAll(answer.Error, req.Root+"/", "")
	}
	return answer
}

func helmTemplateIn(req helmTemplateRequest) helmTemplateAnswer {
	values, err := composeValues(req)
	if err != nil {
		return helmTemplateAnswer{Error: err.Error(), Stage: "values"}
	}
	ch, err := loadChart(req)
	if err != nil {
		return helmTemplateAnswer{Error: err.Error(), Stage: "chart", Values: values}
	}
	if req.SourceRevision != "" {
		if err := withRevisionDigest(ch, req.SourceRevision); err != nil {
			return helmTemplateAnswer{Error: err.Error(), Stage: "chart", Values: values}
		}
	}
	answer := helmTemplateAnswer{Values: values, ChartName: ch.Metadata.Name, ChartVersion: ch.Metadata.Version, UsesLookup: usesLookup(ch)}
	fail := func(err error) helmTemplateAnswer {
		answer.Error, answer.Stage = err.Error(), "render"
		return answer
	}
	caps, err := capabilities(req)
	if err != nil {
		return fail(err)
	}
	if ch.Metadata.KubeVersion != "" && !chartv2util.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return fail(fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.Version))
	}
	// Helm's install and upgrade actions, in their order: dependencies enabled by the values,
	// the render values (schema checked), the engine, NOTES.txt apart, post-render, then sort.
	if err := chartv2util.ProcessDependencies(ch, values); err != nil {
		return fail(err)
	}
	options := common.ReleaseOptions{Name: req.Release, Namespace: req.Namespace, Revision: req.Revision, IsUpgrade: req.IsUpgrade, IsInstall: !req.IsUpgrade}
	renderValues, err := commonutil.ToRenderValuesWithSchemaValidation(ch, values, options, caps, req.SkipSchemaValidation)
	if err != nil {
		return fail(err)
	}
	files, err := engine.Render(ch, renderValues)
	if err != nil {
		return fail(err)
	}
	answer.Notes = takeNotes(ch, files)
	chain := postRenderChain(req)
	hooks, manifests, err := postRenderFiles(files, chain, req.PostRenderStrategy)
	if err != nil {
		return fail(err)
	}
	var manifest strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&manifest, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	answer.Manifest = manifest.String()
	for _, h := range hooks {
		events := make([]string, 0, len(h.Events))
		for _, e := range h.Events {
			events = append(events, string(e))
		}
		answer.Hooks = append(answer.Hooks, renderedHook{Name: h.Name, Kind: h.Kind, Path: h.Path, Manifest: h.Manifest, Events: events, Weight: h.Weight})
	}
	for _, crd := range ch.CRDObjects() {
		answer.CRDs = append(answer.CRDs, renderedCRD{Path: crd.Filename, Manifest: string(crd.File.Data)})
	}
	return answer
}

// withRevisionDigest is helm-controller's mutateChartWithSourceRevision (digest tracking on, its default).
func withRevisionDigest(ch *chart.Chart, revision string) error {
	version, err := semver.NewVersion(ch.Metadata.Version)
	if err != nil {
		return fmt.Errorf("invalid chart version %s", ch.Metadata.Version)
	}
	digest := revision
	if tag, at, found := strings.Cut(revision, "@"); found {
		// An OCI tag spells a version's `+` as `_`.
		if tagVersion, err := semver.NewVersion(strings.ReplaceAll(tag, "_", "+")); err == nil && !tagVersion.Equal(version) {
			return fmt.Errorf("artifact revision %s does not match chart version %s", tag, ch.Metadata.Version)
		}
		digest = at
	}
	_, hex, found := strings.Cut(digest, ":")
	if !found || len(hex) < 12 {
		return fmt.Errorf("invalid artifact revision %s", revision)
	}
	tracked, err := version.SetMetadata(hex[:12])
	if err != nil {
		return err
	}
	ch.Metadata.Version = tracked.String()
	return nil
}

var lookupCall = regexp.MustCompile(`\blookup\s`)

func usesLookup(ch *chart.Chart) bool {
	for _, t := range ch.Templates {
		if lookupCall.Match(t.Data) {
			return true
		}
	}
	for _, dependency := range ch.Dependencies() {
		if usesLookup(dependency) {
			return true
		}
	}
	return false
}

// composeValues is helm-controller's own composition: Flux's chartutil reading valuesFrom in
// order from the objects the host gave, inline values merged last.
func composeValues(req helmTemplateRequest) (map[string]any, error) {
	objects, err := objectsOf(req.Objects)
	if err != nil {
		return nil, err
	}
	values, err := chartutil.ChartValuesFromReferences(context.Background(), logr.Discard(), objects, req.Owner.Namespace, req.Values, req.ValuesFrom...)
	if err != nil {
		return nil, err
	}
	return values, nil
}

// loadChart reads the chart as Helm's loader does, .helmignore and its default rules applied.
// LoadDir follows symbolic links, which is safe here: the host lays out regular files only, in a
// filesystem that holds nothing else. An archive is read from memory.
func loadChart(req helmTemplateRequest) (*chart.Chart, error) {
	if req.Archive != "" {
		data, err := os.ReadFile(filepath.Join(req.Root, req.Archive))
		if err != nil {
			return nil, err
		}
		return loader.LoadArchive(bytes.NewReader(data))
	}
	return loader.LoadDir(req.Root)
}

func capabilities(req helmTemplateRequest) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if req.KubeVersion != "" {
		version, err := common.ParseKubeVersion(req.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("the Kubernetes version %q: %w", req.KubeVersion, err)
		}
		caps.KubeVersion = *version
	}
	if len(req.APIVersions) > 0 {
		set := append(common.VersionSet{}, caps.APIVersions...)
		caps.APIVersions = append(set, req.APIVersions...)
	}
	return caps, nil
}

// takeNotes removes NOTES.txt files from the render, keeping the top chart's text as Helm does.
func takeNotes(ch *chart.Chart, files map[string]string) string {
	notes := ""
	top := ch.Name() + "/templates/NOTES.txt"
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		if name == top {
			notes = files[name]
		}
		delete(files, name)
	}
	return notes
}

// postRenderFiles runs the chain over the rendered files by Helm's strategy and sorts the result
// into hooks and manifests (releaseutil.SortManifests, install order).
func postRenderFiles(files map[string]string, chain []postRenderStep, strategy string) ([]*release.Hook, []releaseutil.Manifest, error) {
	switch strategy {
	case "", "combined":
		rendered, err := postRenderGroup(files, chain, "")
		if err != nil {
			return nil, nil, fmt.Errorf("error while running post render on files: %w", err)
		}
		return sortManifests(rendered)
	case "nohooks", "separate":
		hooks, manifests, err := sortManifests(files)
		if err != nil {
			return nil, nil, err
		}
		hookFiles, manifestFiles := map[string]string{}, map[string]string{}
		for _, h := range hooks {
			appendDocument(hookFiles, h.Path, h.Manifest)
		}
		for _, m := range manifests {
			appendDocument(manifestFiles, m.Name, m.Content)
		}
		if strategy == "separate" && len(hookFiles) > 0 {
			if hookFiles, err = postRenderGroup(hookFiles, chain, "hooks"); err != nil {
				return nil, nil, fmt.Errorf("error while running post render on hooks: %w", err)
			}
		}
		if len(manifestFiles) > 0 {
			if manifestFiles, err = postRenderGroup(manifestFiles, chain, "manifests"); err != nil {
				return nil, nil, fmt.Errorf("error while running post render on manifests: %w", err)
			}
		}
		for name, content := range hookFiles {
			appendDocument(manifestFiles, name, content)
		}
		return sortManifests(manifestFiles)
	default:
		return nil, nil, fmt.Errorf("unknown post-render strategy: '%s'", strategy)
	}
}

func appendDocument(files map[string]string, name, content string) {
	if existing, ok := files[name]; ok {
		files[name] = existing + "\n---\n" + content
	} else {
		files[name] = content
	}
}

func sortManifests(files map[string]string) ([]*release.Hook, []releaseutil.Manifest, error) {
	return releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
}
