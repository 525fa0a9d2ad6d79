package main

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// valuesObjects answers chartutil's reads of ConfigMaps and Secrets from the objects the host
// gave, as the apiserver would hold them (a Secret's stringData folded into data). Only Get is
// ever called by chartutil.ChartValuesFromReferences; any other call panics on the nil client.
type valuesObjects struct {
	kubeclient.Client
	configMaps map[kubeclient.ObjectKey]corev1.ConfigMap
	secrets    map[kubeclient.ObjectKey]corev1.Secret
}

func objectsOf(raw []json.RawMessage) (*valuesObjects, error) {
	objects := &valuesObjects{configMaps: map[kubeclient.ObjectKey]corev1.ConfigMap{}, secrets: map[kubeclient.ObjectKey]corev1.Secret{}}
	for _, one := range raw {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(one, &head); err != nil {
			return nil, fmt.Errorf("a values object is not valid JSON: %w", err)
		}
		switch head.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := json.Unmarshal(one, &cm); err != nil {
				return nil, fmt.Errorf("ConfigMap: %w", err)
			}
			objects.configMaps[kubeclient.ObjectKeyFromObject(&cm)] = cm
		case "Secret":
			var secret corev1.Secret
			if err := json.Unmarshal(one, &secret); err != nil {
				return nil, fmt.Errorf("Secret: %w", err)
			}
			if secret.Data == nil {
				secret.Data = map[string][]byte{}
			}
			for key, value := range secret.StringData {
				secret.Data[key] = []byte(value)
			}
			objects.secrets[kubeclient.ObjectKeyFromObject(&secret)] = secret
		default:
			return nil, fmt.Errorf("a values object is a %q, not a ConfigMap or Secret", head.Kind)
		}
	}
	return objects, nil
}

func (o *valuesObjects) Get(_ context.Context, key kubeclient.ObjectKey, obj kubeclient.Object, _ ...kubeclient.GetOption) error {
	switch target := obj.(type) {
	case *corev1.ConfigMap:
		if found, ok := o.configMaps[key]; ok {
			*target = found
			return nil
		}
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	case *corev1.Secret:
		if found, ok := o.secrets[key]; ok {
			*target = found
			return nil
		}
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	default:
		return fmt.Errorf("values are read from ConfigMaps and Secrets only")
	}
}
