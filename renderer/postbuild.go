package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	flux "github.com/fluxcd/pkg/kustomize"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/provider"
)

// postBuildRequest is the Flux half of a Kustomization's build, on kustomize's output: postBuild
// substitution (Flux's SubstituteVariables) and commonMetadata, giving the objects as
// kustomize-controller applies them.
type postBuildRequest struct {
	// YAML is the build's output (buildAnswer.YAML).
	YAML string `json:"yaml"`
	// Kustomization is the Flux Kustomization object (apiVersion, kind, metadata, spec).
	Kustomization map[string]any `json:"kustomization"`
	// Values are the substituteFrom objects the host found (in the repository or the cluster).
	Values []valuesObject `json:"values,omitempty"`
	// Absent are `Kind/name` substituteFrom references the host could not read: substituted as
	// if optional and absent.
	Absent []string `json:"absent,omitempty"`
}

type valuesObject struct {
	Kind string            `json:"kind"`
	Name string            `json:"name"`
	Data map[string]string `json:"data"`
}

type appliedObject struct {
	// Object is the object as kustomize-controller applies it; absent when Error is set.
	Object json.RawMessage `json:"object,omitempty"`
	// Origin is kustomize's origin annotation (which file or generator the object came from).
	Origin string `json:"origin,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Name   string `json:"name,omitempty"`
	// Error is why Flux would refuse this object (kustomize-controller then applies nothing).
	Error string `json:"error,omitempty"`
	// Unresolved names the variables it uses with no value (Flux substitutes them empty).
	Unresolved []string `json:"unresolved,omitempty"`
}

type postBuildAnswer struct {
	Objects []appliedObject `json:"objects"`
	Error   string          `json:"error,omitempty"`
}

const originAnnotation = "config.kubernetes.io/origin"

// postBuild follows kustomize-controller's build (each resource checked, then substituted when
// spec.postBuild is set) and its apply step (the objects read, commonMetadata set). An object
// Flux refuses is returned with its error, and the others still are.
func postBuild(req postBuildRequest) postBuildAnswer {
	resources, err := provider.NewDefaultDepProvider().GetResourceFactory().SliceFromBytes([]byte(req.YAML))
	if err != nil {
		return postBuildAnswer{Error: fmt.Sprintf("kustomize output does not parse: %v", err)}
	}
	obj := unstructured.Unstructured{Object: req.Kustomization}
	u := withAbsentOptional(obj, req.Absent)
	client := valuesClient{objects: req.Values}
	_, substituting, _ := unstructured.NestedMap(obj.Object, "spec", "postBuild")
	strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "postBuild", "substituteStrategy")
	labels, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "commonMetadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "commonMetadata", "annotations")

	answer := postBuildAnswer{Objects: make([]appliedObject, 0, len(resources))}
	var vars map[string]string
	if substituting {
		if vars, err = postBuildVariables(u, client); err != nil {
			return postBuildAnswer{Error: fmt.Sprintf("post build failed: %v", err)}
		}
	}
	for _, res := range resources {
		origin := res.GetAnnotations()[originAnnotation]
		entry := appliedObject{Origin: origin, Kind: res.GetKind(), Name: res.GetName()}
		if res.GetName() == "" || res.GetKind() == "" || res.GetApiVersion() == "" {
			entry.Error = "failed to decode Kubernetes apiVersion, kind and name"
			answer.Objects = append(answer.Objects, entry)
			continue
		}
		if substituting {
			entry.Unresolved = unresolvedIn(res, vars)
			if _, err := flux.SubstituteVariables(context.Background(), client, u, res,
				flux.SubstituteWithStrict(false), flux.SubstituteWithAlways(strategy == "Always")); err != nil {
				entry.Error = fmt.Sprintf("post build failed for '%s/%s': %v", res.GetGvk(), res.GetName(), err)
				answer.Objects = append(answer.Objects, entry)
				continue
			}
		}
		data, err := res.AsYAML()
		if err == nil {
			var applied []*unstructured.Unstructured
			applied, err = ssautil.ReadObjects(bytes.NewReader(data))
			if err == nil {
				ssautil.SetCommonMetadata(applied, labels, annotations)
				for _, object := range applied {
					one := entry
					one.Object, err = withoutOrigin(object).MarshalJSON()
					if err != nil {
						break
					}
					answer.Objects = append(answer.Objects, one)
				}
			}
		}
		if err != nil {
			entry.Error = err.Error()
			answer.Objects = append(answer.Objects, entry)
		}
	}
	return answer
}

func withoutOrigin(object *unstructured.Unstructured) *unstructured.Unstructured {
	annotations := object.GetAnnotations()
	if _, ok := annotations[originAnnotation]; !ok {
		return object
	}
	delete(annotations, originAnnotation)
	if len(annotations) == 0 {
		unstructured.RemoveNestedField(object.Object, "metadata", "annotations")
	} else {
		object.SetAnnotations(annotations)
	}
	return object
}
