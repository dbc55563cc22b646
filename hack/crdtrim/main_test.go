package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crdFile is the generated CRD, as make manifests leaves it.
var crdFile = filepath.Join("..", "..", "config", "crd", "bases", "summa.dev_summaindexes.yaml")

// descriptions counts the descriptions at and below s.
func descriptions(s apiextensionsv1.JSONSchemaProps) int {
	n := 0
	if s.Description != "" {
		n++
	}
	for _, p := range s.Properties {
		n += descriptions(p)
	}
	if s.Items != nil && s.Items.Schema != nil {
		n += descriptions(*s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		n += descriptions(*s.AdditionalProperties.Schema)
	}
	return n
}

func TestTheCommittedCRDIsTrimmedAndTrimmingAgainChangesNothing(t *testing.T) {
	raw, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	out, err := trim(raw)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(raw) {
		t.Fatal("the committed CRD is not trimmed: run make manifests")
	}
	if len(raw) > 400<<10 {
		t.Errorf("the CRD is %d bytes; keep it well below the 1 MiB of an object", len(raw))
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	pt := spec.Properties["podTemplate"]
	if !strings.Contains(pt.Description, "PodTemplate adds application containers") || descriptions(pt) != 1 {
		t.Errorf("podTemplate keeps its own description only: %d descriptions", descriptions(pt))
	}
	if spec.Properties["storage"].Description == "" || spec.Properties["lifecycle"].Properties["appShutdownSeconds"].Description == "" {
		t.Error("the descriptions of Summa's own fields are gone")
	}
	podSpec := pt.Properties["spec"]
	if len(podSpec.Required) != 0 {
		t.Errorf("podTemplate.spec requires %v", podSpec.Required)
	}
	for path, want := range maxItems {
		s := podSpec
		for _, step := range strings.Split(strings.TrimPrefix(path, "spec."), ".") {
			if name, ok := strings.CutSuffix(step, "[]"); ok {
				s = *s.Properties[name].Items.Schema
				continue
			}
			s = s.Properties[step]
		}
		if s.MaxItems == nil || *s.MaxItems != want {
			t.Errorf("%s: maxItems %v, want %d", path, s.MaxItems, want)
		}
	}
	if pt.Properties["metadata"].Properties["labels"].Type != "object" {
		t.Error("the template's labels are not in the schema (generateEmbeddedObjectMeta)")
	}
}
