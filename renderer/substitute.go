package main

import (
	"context"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/envsubst/parse"
	flux "github.com/fluxcd/pkg/kustomize"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/resource"
)

// valuesClient serves Flux's LoadVariables the substituteFrom objects the host found; it can
// only Get a ConfigMap or a Secret (LoadVariables needs nothing else).
type valuesClient struct {
	client.Client
	objects []valuesObject
}

func (c valuesClient) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	for _, v := range c.objects {
		if v.Name != key.Name {
			continue
		}
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			if v.Kind == "ConfigMap" {
				o.Data = v.Data
				return nil
			}
		case *corev1.Secret:
			if v.Kind == "Secret" {
				o.Data = map[string][]byte{}
				for k, s := range v.Data {
					o.Data[k] = []byte(s)
				}
				return nil
			}
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(kindOf(obj)) + "s"}, key.Name)
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*corev1.Secret); ok {
		return "Secret"
	}
	return "ConfigMap"
}

// withAbsentOptional marks the substituteFrom references the host could not read as optional:
// offline they are unknown, not missing, and the host reports them itself.
func withAbsentOptional(obj unstructured.Unstructured, absent []string) unstructured.Unstructured {
	if len(absent) == 0 {
		return obj
	}
	out := *obj.DeepCopy()
	refs, _, _ := unstructured.NestedSlice(out.Object, "spec", "postBuild", "substituteFrom")
	for i, r := range refs {
		ref, ok := r.(map[string]any)
		if !ok {
			continue
		}
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		for _, a := range absent {
			if a == kind+"/"+name {
				ref["optional"] = true
				refs[i] = ref
			}
		}
	}
	_ = unstructured.SetNestedSlice(out.Object, refs, "spec", "postBuild", "substituteFrom")
	return out
}

// postBuildVariables are the values Flux substitutes: the substituteFrom objects (Flux's own
// LoadVariables), then spec.postBuild.substitute over them.
func postBuildVariables(u unstructured.Unstructured, c valuesClient) (map[string]string, error) {
	vars, err := flux.LoadVariables(context.Background(), c, u)
	if err != nil {
		return nil, err
	}
	inline, _, _ := unstructured.NestedStringMap(u.Object, "spec", "postBuild", "substitute")
	for k, v := range inline {
		vars[k] = strings.ReplaceAll(v, "\n", "")
	}
	return vars, nil
}

// unresolvedIn names the variables an object uses, with no default, that postBuild gives no
// value: kustomize-controller substitutes them empty, which offline may be wrong (a value held
// only in the cluster). Read with Flux's own parser; nil for an object that opts out.
func unresolvedIn(res *resource.Resource, vars map[string]string) []string {
	if res.GetLabels()[substituteKey] == flux.DisabledValue || res.GetAnnotations()[substituteKey] == flux.DisabledValue {
		return nil
	}
	data, err := res.AsYAML()
	if err != nil {
		return nil
	}
	// A text that does not parse is SubstituteVariables' to report.
	tree, err := parse.Parse(string(data))
	if err != nil {
		return nil
	}
	missing := map[string]bool{}
	var visit func(parse.Node)
	visit = func(node parse.Node) {
		switch n := node.(type) {
		case *parse.ListNode:
			for _, child := range n.Nodes {
				visit(child)
			}
		case *parse.FuncNode:
			// Flux's strict mode lists the same: a default operator tolerates an unset variable.
			if _, ok := vars[n.Param]; !ok && !defaultOperators[n.Name] {
				missing[n.Param] = true
			}
			for _, arg := range n.Args {
				visit(arg)
			}
		}
	}
	visit(tree.Root)
	out := make([]string, 0, len(missing))
	for name := range missing {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// The operators fluxcd/pkg/envsubst lets an unset variable through (its isDefaultOp).
var defaultOperators = map[string]bool{"-": true, "+": true, "=": true, "?": true, ":-": true, ":+": true, ":=": true, ":?": true}

const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"
