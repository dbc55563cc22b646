package charts

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// config/ is the source of what the chart installs with its default
// values: make chart-sync copies its CRDs and RBAC into the chart
// (TestChartMatchesConfig), and the tests below fail on any other drift:
// an object only one of them makes, and any field of the operator
// Deployment (strategy, replicas, pod and container settings, every flag
// and its value). The chart's values only add what config/ leaves to
// overlays (a NetworkPolicy, monitoring, namespaced mode).

// configOnly are the objects of config/default the chart does not render,
// with why.
var configOnly = map[string]string{
	"Namespace/" + namespace: "Helm makes the release namespace (helm install --create-namespace)",
}

// chartKey is the kind/name under which the chart renders config/'s
// object key.
func chartKey(key string) string {
	if n, ok := chartRoleName[key]; ok {
		kind, _, _ := strings.Cut(key, "/")
		return kind + "/" + n
	}
	return key
}

// TestChartRendersConfigObjects: with its default values the chart renders
// exactly config/default's objects, but for configOnly.
func TestChartRendersConfigObjects(t *testing.T) {
	chart := byKindName(renderChart(t))
	config := byKindName(buildConfig(t))
	seen := map[string]bool{}
	for key := range config {
		if _, ok := configOnly[key]; ok {
			continue
		}
		ck := chartKey(key)
		seen[ck] = true
		if chart[ck] == nil {
			t.Errorf("config/ has %s; the chart (default values) renders no %s", key, ck)
		}
	}
	for key := range chart {
		if !seen[key] {
			t.Errorf("the chart renders %s by default; config/ has no counterpart", key)
		}
	}
}

// helmOnlyLabels are the labels the chart adds for its release.
var helmOnlyLabels = []string{"app.kubernetes.io/instance", "helm.sh/chart", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

// deploymentSpec is d's spec without what is the release's (Helm's labels)
// and without the manager's args, compared flag by flag.
func deploymentSpec(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(d.DeepCopy().Object, "spec")
	for _, path := range [][]string{{"selector", "matchLabels"}, {"template", "metadata", "labels"}} {
		labels, _, _ := unstructured.NestedMap(spec, path...)
		for _, l := range helmOnlyLabels {
			delete(labels, l)
		}
		if err := unstructured.SetNestedMap(spec, labels, path...); err != nil {
			t.Fatal(err)
		}
	}
	cs, _, _ := unstructured.NestedSlice(spec, "template", "spec", "containers")
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == "manager" {
			delete(m, "args")
		}
	}
	if err := unstructured.SetNestedSlice(spec, cs, "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	return spec
}

// flagValues maps each flag of the container to its value ("true" for a
// bare "--name").
func flagValues(c map[string]any) map[string]string {
	m := map[string]string{}
	args, _ := c["args"].([]any)
	for _, a := range args {
		s, _ := a.(string)
		name, val, ok := strings.Cut(s, "=")
		if !ok {
			val = "true"
		}
		m[name] = val
	}
	return m
}

// defaultEngineImage is the engine image a build of the Makefile stamps
// into the operator (ENGINE_IMG at VERSION), which config/ relies on.
func defaultEngineImage(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` \?= (\S+)$`).FindSubmatch(mk)
		if m == nil {
			t.Fatalf("no %s ?= line in the Makefile", name)
		}
		return string(m[1])
	}
	img := strings.ReplaceAll(get("ENGINE_IMG"), "$(IMAGE_REGISTRY)", get("IMAGE_REGISTRY"))
	return strings.ReplaceAll(img, "$(VERSION)", get("VERSION"))
}

// TestChartDeploymentIsConfigs: the chart's operator Deployment, with the
// default values, is config/'s: the same spec field by field and the same
// flags with the same values. The one way they differ is how the engine
// image is set: config/ leaves it to the default the build stamps into the
// operator (so that an overlay's SUMMA_ENGINE_IMAGE still applies), the
// chart passes --engine-image from its values; both must name the same
// image.
func TestChartDeploymentIsConfigs(t *testing.T) {
	c := byKindName(buildConfig(t))["Deployment/summa-operator"]
	h := byKindName(renderChart(t))["Deployment/summa-operator"]
	if c == nil || h == nil {
		t.Fatalf("Deployment: config/ %v, chart %v", c != nil, h != nil)
	}
	if cs, hs := deploymentSpec(t, c), deploymentSpec(t, h); !reflect.DeepEqual(cs, hs) {
		cy, _ := yaml.Marshal(cs)
		hy, _ := yaml.Marshal(hs)
		t.Errorf("the operator Deployment's spec differs\nconfig/:\n%s\nchart:\n%s", cy, hy)
	}
	cf, hf := flagValues(managerContainer(t, c)), flagValues(managerContainer(t, h))
	if img, want := hf["--engine-image"], defaultEngineImage(t); img != want {
		t.Errorf("the chart's --engine-image is %q, the operator's built-in default (config/) %q", img, want)
	}
	if _, ok := cf["--engine-image"]; ok {
		t.Error("config/ sets --engine-image: it would override SUMMA_ENGINE_IMAGE of its overlays")
	}
	delete(hf, "--engine-image")
	if !reflect.DeepEqual(cf, hf) {
		t.Errorf("the operator's flags differ\nconfig/: %v\nchart:   %v", cf, hf)
	}
}
