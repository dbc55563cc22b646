// Command crdtrim trims the generated SummaIndex CRD in place: below
// spec.podTemplate, the schema controller-gen copies from Kubernetes'
// PodTemplateSpec keeps its types, formats, defaults, enums and list and
// map markers, and loses its field descriptions (as ECK does for its pod
// templates), so that the CRD stays far below the 1 MiB an object may have
// in etcd and the 256 KiB of the last-applied annotation of a client-side
// `kubectl apply`. The description of spec.podTemplate itself, and every
// description of Summa's own fields, are kept: they are the API's
// documentation (`kubectl explain`, docs/api.md).
//
// It also bounds the lists the CEL rules of spec.podTemplate iterate
// (containers, init containers, volumes, ports), so that the API server's
// cost estimate of those rules stays within its limits (see maxItems), and
// makes the template's containers optional (see optional).
//
//	go run ./hack/crdtrim FILE...
//
// `make manifests` runs it after controller-gen; running it twice changes
// nothing.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// trimmedPath is the property path, from the version's schema root, whose
// descendants lose their descriptions.
var trimmedPath = []string{"spec", "podTemplate"}

// maxItems bounds lists below trimmedPath, by their path from it (a "[]"
// element steps into a list's items). Real pods stay far below these; the
// bounds exist so that the API server can estimate the cost of the CEL
// rules that iterate them.
var maxItems = map[string]int64{
	"spec.containers":             64,
	"spec.initContainers":         64,
	"spec.volumes":                256,
	"spec.containers[].ports":     64,
	"spec.initContainers[].ports": 64,
}

// optional lists properties that the template does not require, by the
// path of their parent below trimmedPath: a template may hold only pod
// settings (a node selector, tolerations), and the engine is then the
// pod's one container.
var optional = map[string][]string{
	"spec": {"containers"},
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdtrim FILE...")
		os.Exit(2)
	}
	for _, f := range os.Args[1:] {
		if err := trimFile(f); err != nil {
			fmt.Fprintln(os.Stderr, "crdtrim:", err)
			os.Exit(1)
		}
	}
}

// trimFile trims the CRD in file, rewriting it only when it changed.
func trimFile(file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, err := trim(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if bytes.Equal(out, raw) {
		return nil
	}
	return os.WriteFile(file, out, 0o644)
}

// trim returns the trimmed CRD of raw (one YAML document, as
// controller-gen writes it: "---" first).
func trim(raw []byte) ([]byte, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return nil, fmt.Errorf("decode CRD: %w", err)
	}
	found := false
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		// Properties are stored by value, but the maps are shared: the
		// parent's map takes the trimmed copy.
		parent := v.Schema.OpenAPIV3Schema
		for _, name := range trimmedPath[:len(trimmedPath)-1] {
			p, ok := parent.Properties[name]
			if !ok {
				parent = nil
				break
			}
			parent = &p
		}
		last := trimmedPath[len(trimmedPath)-1]
		if parent == nil || parent.Properties == nil {
			continue
		}
		p, ok := parent.Properties[last]
		if !ok {
			continue
		}
		found = true
		parent.Properties[last] = trimSchema(p, "", false)
	}
	if !found {
		return nil, fmt.Errorf("no schema has the property %s", strings.Join(trimmedPath, "."))
	}
	return encode(crd)
}

// encode writes crd as controller-gen does: without the status a CRD
// manifest does not carry.
func encode(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	j, err := json.Marshal(crd)
	if err != nil {
		return nil, fmt.Errorf("encode CRD: %w", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(j, &obj); err != nil {
		return nil, fmt.Errorf("encode CRD: %w", err)
	}
	delete(obj, "status")
	out, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode CRD: %w", err)
	}
	return append([]byte("---\n"), out...), nil
}

// trimSchema returns s without the descriptions below it (and its own when
// clear is set), with maxItems applied; path is s's path below
// trimmedPath.
func trimSchema(s apiextensionsv1.JSONSchemaProps, path string, clear bool) apiextensionsv1.JSONSchemaProps {
	if clear {
		s.Description = ""
	}
	if n, ok := maxItems[path]; ok && s.Type == "array" {
		s.MaxItems = &n
	}
	if drop, ok := optional[path]; ok {
		s.Required = slices.DeleteFunc(slices.Clone(s.Required), func(r string) bool { return slices.Contains(drop, r) })
		if len(s.Required) == 0 {
			s.Required = nil
		}
	}
	if s.Properties != nil {
		props := make(map[string]apiextensionsv1.JSONSchemaProps, len(s.Properties))
		for name, p := range s.Properties {
			child := name
			if path != "" {
				child = path + "." + name
			}
			props[name] = trimSchema(p, child, true)
		}
		s.Properties = props
	}
	if s.Items != nil && s.Items.Schema != nil {
		item := trimSchema(*s.Items.Schema, path+"[]", true)
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		v := trimSchema(*s.AdditionalProperties.Schema, path+"{}", true)
		s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &v}
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			list[i] = trimSchema(list[i], path, true)
		}
	}
	return s
}
