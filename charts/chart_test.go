// Package charts holds the Helm chart of the operator (summa-operator/)
// and this test, which keeps it from drifting from config/: it renders the
// chart with helm and builds config/default with kustomize, then compares
// the CRD, every Role and ClusterRole's rules and bindings, the operator's
// security settings and flags, and the release versions. `helm lint
// --strict` must pass too.
//
// helm comes from $HELM or bin/helm-<version> (`make helm`); without it
// the test is skipped, unless SUMMA_REQUIRE_HELM is set, as `make test`
// does.
package charts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	// chartDir is the chart, from this package.
	chartDir = "summa-operator"
	// releaseName and namespace are the release the comparison renders;
	// config/default installs into the same namespace.
	releaseName = "summa-operator"
	namespace   = "summa-system"
)

// chartRoleName maps each Role and ClusterRole of config/ to its name in
// the chart rendered as releaseName. A role added to config/ fails the test
// until the chart has it too.
var chartRoleName = map[string]string{
	"ClusterRole/summa-operator":                 "summa-operator",
	"Role/summa-operator-leader-election":        "summa-operator-leader-election",
	"ClusterRole/summa-summaindex-editor":        "summa-operator-summaindex-editor",
	"ClusterRole/summa-summaindex-viewer":        "summa-operator-summaindex-viewer",
	"ClusterRoleBinding/summa-operator":          "summa-operator",
	"RoleBinding/summa-operator-leader-election": "summa-operator-leader-election",
	"ClusterRole/summa-metrics-reader":           "summa-operator-metrics-reader",
}

// helmBin finds helm, or skips the test when it is not built and not
// required.
func helmBin(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	matches, _ := filepath.Glob(filepath.Join("..", "bin", "helm-v*"))
	sort.Strings(matches)
	if len(matches) > 0 {
		p, err := filepath.Abs(matches[len(matches)-1])
		if err == nil {
			return p
		}
	}
	msg := "helm is not built (make helm), and $HELM is unset"
	if os.Getenv("SUMMA_REQUIRE_HELM") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// runHelm runs helm and returns its standard output.
func runHelm(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// decode splits a multi-document YAML stream into objects.
func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decode: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// byKindName indexes objects by "Kind/name".
func byKindName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()+"/"+o.GetName()] = o
	}
	return m
}

// renderChart renders the chart as releaseName in namespace, CRDs included.
func renderChart(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	base := []string{"template", releaseName, chartDir, "--namespace", namespace, "--include-crds"}
	return decode(t, runHelm(t, append(base, args...)...))
}

// buildConfig builds config/default with kustomize's API.
func buildConfig(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join("..", "config", "default"))
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

func TestHelmLint(t *testing.T) {
	runHelm(t, "lint", "--strict", chartDir)
	// The optional parts render too.
	objs := renderChart(t, "--set", "metrics.serviceMonitor.enabled=true,leaderElection.enabled=false,image.digest=sha256:0123",
		"--set", "rbac.aggregateToDefaultRoles=false,operator.volumePermissions=true,hostNetwork=true")
	kinds := byKindName(objs)
	if kinds["ServiceMonitor/summa-operator"] == nil {
		t.Error("metrics.serviceMonitor.enabled renders no ServiceMonitor")
	}
	if kinds["Role/summa-operator-leader-election"] != nil {
		t.Error("leaderElection.enabled=false still renders the leader-election Role")
	}
	if kinds["ClusterRole/summa-operator-summaindex-editor"] != nil {
		t.Error("rbac.aggregateToDefaultRoles=false still renders the editor role")
	}
	c := managerContainer(t, kinds["Deployment/summa-operator"])
	if c["image"] != "ghcr.io/summadev/summa-operator@sha256:0123" {
		t.Errorf("image.digest: image %v", c["image"])
	}
	if flags := flagSet(c); !flags["--volume-permissions"] || flags["--leader-elect"] {
		t.Errorf("flags %v", c["args"])
	}
}

// TestMonitoring renders the chart's monitoring objects and checks them
// against config/prometheus and config/grafana: the ServiceMonitor scrapes
// HTTPS with a token while metrics are secure (plain HTTP otherwise), the
// PodMonitor selects the engine pods, the PrometheusRule carries the rule
// groups of config/prometheus/summa-rules.yaml (as config/prometheus's
// rules.yaml does), and the dashboard ConfigMap holds
// config/grafana/summa-dashboard.json for Grafana's sidecar.
func TestMonitoring(t *testing.T) {
	if k := byKindName(renderChart(t)); k["ServiceMonitor/summa-operator"] != nil || k["PodMonitor/summa-operator-engines"] != nil ||
		k["PrometheusRule/summa-operator"] != nil || k["ConfigMap/summa-operator-dashboard"] != nil {
		t.Error("monitoring objects render by default")
	}
	kinds := byKindName(renderChart(t, "--set", "metrics.serviceMonitor.enabled=true,metrics.podMonitor.enabled=true",
		"--set", "metrics.prometheusRule.enabled=true,grafana.dashboard.enabled=true"))

	sm := kinds["ServiceMonitor/summa-operator"]
	if sm == nil {
		t.Fatal("no ServiceMonitor")
	}
	ep, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(ep) != 1 || ep[0].(map[string]any)["scheme"] != "https" || ep[0].(map[string]any)["bearerTokenFile"] == nil {
		t.Errorf("secure metrics: ServiceMonitor endpoints %v", ep)
	}
	plain := byKindName(renderChart(t, "--set", "metrics.serviceMonitor.enabled=true,metrics.secure=false,metrics.port=8080,metrics.service.port=8080"))
	ep, _, _ = unstructured.NestedSlice(plain["ServiceMonitor/summa-operator"].Object, "spec", "endpoints")
	if len(ep) != 1 || ep[0].(map[string]any)["scheme"] != "http" || ep[0].(map[string]any)["bearerTokenFile"] != nil {
		t.Errorf("plain metrics: ServiceMonitor endpoints %v", ep)
	}
	if f := flagSet(managerContainer(t, plain["Deployment/summa-operator"])); f["--metrics-secure"] {
		t.Errorf("metrics.secure=false: flags %v", f)
	}

	pm := kinds["PodMonitor/summa-operator-engines"]
	if pm == nil {
		t.Fatal("no PodMonitor")
	}
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if sel["app.kubernetes.io/managed-by"] != "summa-operator" || sel["summa.dev/component"] != "engine" {
		t.Errorf("PodMonitor selector %v", sel)
	}
	cfgPM := readObject(t, filepath.Join("..", "config", "prometheus", "engine_podmonitor.yaml"))
	for _, path := range [][]string{{"spec", "selector"}, {"spec", "namespaceSelector"}} {
		a, _, _ := unstructured.NestedFieldNoCopy(cfgPM.Object, path...)
		b, _, _ := unstructured.NestedFieldNoCopy(pm.Object, path...)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("PodMonitor %s: config/ %v, chart %v", strings.Join(path, "."), a, b)
		}
	}

	var plainRules map[string]any
	readYAML(t, filepath.Join("..", "config", "prometheus", "summa-rules.yaml"), &plainRules)
	pr := kinds["PrometheusRule/summa-operator"]
	if pr == nil {
		t.Fatal("no PrometheusRule")
	}
	cfgPR := readObject(t, filepath.Join("..", "config", "prometheus", "rules.yaml"))
	for name, o := range map[string]*unstructured.Unstructured{"chart": pr, "config/prometheus/rules.yaml": cfgPR} {
		g, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
		if !reflect.DeepEqual(any(g), plainRules["groups"]) {
			t.Errorf("%s: rule groups differ from config/prometheus/summa-rules.yaml: run make chart-sync", name)
		}
	}
	alerts := map[string]bool{}
	for _, g := range plainRules["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			if a, ok := r.(map[string]any)["alert"].(string); ok {
				alerts[a] = true
			}
		}
	}
	for _, a := range []string{"SummaIndexDoctorRequired", "SummaIndexDurabilityDegraded", "SummaIndexDrainTimeouts",
		"SummaIndexEngineUnreachable", "SummaIndexNotReady", "SummaOperatorReconcileErrors"} {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}

	cm := kinds["ConfigMap/summa-operator-dashboard"]
	if cm == nil {
		t.Fatal("no dashboard ConfigMap")
	}
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v", cm.GetLabels())
	}
	want, err := os.ReadFile(filepath.Join("..", "config", "grafana", "summa-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedString(cm.Object, "data", "summa-dashboard.json")
	if strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Error("the dashboard ConfigMap differs from config/grafana/summa-dashboard.json: run make chart-sync")
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(want, &dash); err != nil {
		t.Fatalf("summa-dashboard.json: %v", err)
	}
	exprs := ""
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs += tg.Expr + "\n"
		}
	}
	for _, m := range []string{"summa_index_documents", "summa_index_uncommitted_documents", "summa_index_segments",
		"summa_index_ready", "summa_index_degraded", "summa_index_drain_estimate_seconds", "summa_commit_duration_seconds",
		"summa_http_requests_total", "summa_operator_reconcile_errors_total", "summa_operator_drains_total"} {
		if !strings.Contains(exprs, m) {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
}

// readObject reads a file of one Kubernetes object.
func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, data)
	if len(objs) != 1 {
		t.Fatalf("%s: %d objects", path, len(objs))
	}
	return objs[0]
}

// TestValuesSchemaRefusesMistakes checks that values.schema.json turns a
// misspelt or mistyped value into an error instead of a silent default.
func TestValuesSchemaRefusesMistakes(t *testing.T) {
	for _, set := range []string{"replicaCount=two", "imagee.tag=v1", "metrics.port=0", "operator.resyncPeriod=soon"} {
		cmd := exec.Command(helmBin(t), "template", releaseName, chartDir, "--set", set)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("--set %s rendered:\n%.200s", set, out)
		}
	}
}

// TestChartCRDsAreConfigs checks that files/crds holds exactly
// config/crd/bases, byte for byte (make chart-sync copies them), and that
// the chart renders them from templates/ so that helm upgrade updates
// them: kept on uninstall unless crds.keep=false, and left out with
// crds.install=false.
func TestChartCRDsAreConfigs(t *testing.T) {
	want, _ := filepath.Glob(filepath.Join("..", "config", "crd", "bases", "*.yaml"))
	got, _ := filepath.Glob(filepath.Join(chartDir, "files", "crds", "*.yaml"))
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("config/crd/bases has %d CRDs, the chart %d: run make chart-sync", len(want), len(got))
	}
	for _, w := range want {
		a, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(chartDir, "files", "crds", filepath.Base(w)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the chart's copy (%v): run make chart-sync", w, err)
		}
	}
	if _, err := os.Stat(filepath.Join(chartDir, "crds")); err == nil {
		t.Error("the chart has a crds/ directory: Helm would install those once and never upgrade them")
	}
	crds := func(args ...string) []*unstructured.Unstructured {
		base := []string{"template", releaseName, chartDir, "--namespace", namespace}
		var out []*unstructured.Unstructured
		for _, o := range decode(t, runHelm(t, append(base, args...)...)) {
			if o.GetKind() == "CustomResourceDefinition" {
				out = append(out, o)
			}
		}
		return out
	}
	rendered := crds()
	if len(rendered) != len(want) {
		t.Fatalf("the chart renders %d CRDs without --include-crds, want %d", len(rendered), len(want))
	}
	for _, c := range rendered {
		if c.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s is not kept on uninstall: %v", c.GetName(), c.GetAnnotations())
		}
		if c.GetAnnotations()["summa.dev/crd-revision"] == "" {
			t.Errorf("%s lost its schema revision: %v", c.GetName(), c.GetAnnotations())
		}
	}
	for _, c := range crds("--set", "crds.keep=false") {
		if _, ok := c.GetAnnotations()["helm.sh/resource-policy"]; ok {
			t.Errorf("crds.keep=false still keeps %s", c.GetName())
		}
	}
	if n := len(crds("--set", "crds.install=false")); n != 0 {
		t.Errorf("crds.install=false renders %d CRDs", n)
	}
}

// TestChartMatchesConfig renders both and compares what must agree.
func TestChartMatchesConfig(t *testing.T) {
	chart := byKindName(renderChart(t))
	config := byKindName(buildConfig(t))

	t.Run("CRD", func(t *testing.T) {
		n := 0
		for key, c := range config {
			if c.GetKind() != "CustomResourceDefinition" {
				continue
			}
			n++
			h := chart[key]
			if h == nil {
				t.Errorf("the chart renders no %s", key)
				continue
			}
			// config/default adds its common label; the schema and the rest
			// must be the same.
			if !reflect.DeepEqual(c.Object["spec"], h.Object["spec"]) {
				t.Errorf("%s: spec differs between config/ and the chart: run make chart-sync", key)
			}
		}
		if n == 0 {
			t.Fatal("config/default has no CRD")
		}
	})

	t.Run("RBAC", func(t *testing.T) {
		for key, c := range config {
			kind := c.GetKind()
			if kind != "Role" && kind != "ClusterRole" && kind != "RoleBinding" && kind != "ClusterRoleBinding" {
				continue
			}
			name, ok := chartRoleName[key]
			if !ok {
				t.Errorf("config/ has %s, which the chart does not know: add it to the chart and to chartRoleName", key)
				continue
			}
			h := chart[kind+"/"+name]
			if h == nil {
				t.Errorf("config/ has %s, the chart no %s/%s", key, kind, name)
				continue
			}
			if kind == "Role" && h.GetNamespace() != namespace {
				t.Errorf("%s: chart namespace %q", key, h.GetNamespace())
			}
			switch kind {
			case "Role", "ClusterRole":
				if cr, hr := rules(t, c), rules(t, h); cr != hr {
					t.Errorf("%s: rules differ\nconfig/:\n%s\nchart:\n%s", key, cr, hr)
				}
				if ca, ha := aggregation(c), aggregation(h); !reflect.DeepEqual(ca, ha) {
					t.Errorf("%s: aggregation labels differ: config/ %v, chart %v", key, ca, ha)
				}
			default:
				checkBinding(t, key, c, h)
			}
		}
		for key := range chart {
			kind := strings.Split(key, "/")[0]
			if strings.Contains(kind, "Role") && !chartKnows(key) {
				t.Errorf("the chart has %s, which config/ lacks", key)
			}
		}
	})

	t.Run("Deployment", func(t *testing.T) {
		c := config["Deployment/summa-operator"]
		h := chart["Deployment/summa-operator"]
		if c == nil || h == nil {
			t.Fatalf("Deployment: config/ %v, chart %v", c != nil, h != nil)
		}
		for _, path := range [][]string{
			{"spec", "template", "spec", "securityContext"},
			{"spec", "template", "spec", "serviceAccountName"},
		} {
			cv, _, _ := unstructured.NestedFieldNoCopy(c.Object, path...)
			hv, _, _ := unstructured.NestedFieldNoCopy(h.Object, path...)
			if !reflect.DeepEqual(cv, hv) {
				t.Errorf("%s: config/ %v, chart %v", strings.Join(path, "."), cv, hv)
			}
		}
		cc, hc := managerContainer(t, c), managerContainer(t, h)
		for _, k := range []string{"securityContext", "command", "livenessProbe", "readinessProbe", "image"} {
			if !reflect.DeepEqual(cc[k], hc[k]) {
				t.Errorf("manager container %s: config/ %v, chart %v", k, cc[k], hc[k])
			}
		}
		hf := flagSet(hc)
		for f := range flagSet(cc) {
			if !hf[f] {
				t.Errorf("config/ runs the operator with %s, the chart does not", f)
			}
		}
		he := envNames(hc)
		for n := range envNames(cc) {
			if !he[n] {
				t.Errorf("config/ gives the operator environment variable %s, the chart does not", n)
			}
		}
		ports := func(o *unstructured.Unstructured) []any {
			p, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
			return p
		}
		if cs, hs := config["Service/summa-operator-metrics"], chart["Service/summa-operator-metrics"]; cs == nil || hs == nil {
			t.Errorf("metrics Service: config/ %v, chart %v", cs != nil, hs != nil)
		} else if !reflect.DeepEqual(ports(cs), ports(hs)) {
			t.Errorf("metrics Service ports: config/ %v, chart %v", ports(cs), ports(hs))
		}
		cp, _, _ := unstructured.NestedSlice(cc, "ports")
		hp, _, _ := unstructured.NestedSlice(hc, "ports")
		if !reflect.DeepEqual(cp, hp) {
			t.Errorf("manager container ports: config/ %v, chart %v", cp, hp)
		}
		if hl := h.GetLabels()["app.kubernetes.io/name"]; hl != "summa-operator" {
			t.Errorf("chart Deployment app.kubernetes.io/name %q: NetworkPolicies admit the operator by summa-operator", hl)
		}
	})
}

// TestVersionsAgree checks that the Makefile's VERSION is the chart's
// appVersion (and version, without the v) and config/manager's image tag.
func TestVersionsAgree(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no VERSION ?= line in the Makefile")
	}
	version := string(m[1])
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, filepath.Join(chartDir, "Chart.yaml"), &chart)
	if chart.AppVersion != version || chart.Version != strings.TrimPrefix(version, "v") {
		t.Errorf("Chart.yaml version %s appVersion %s, Makefile VERSION %s", chart.Version, chart.AppVersion, version)
	}
	var kust struct {
		Images []struct {
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	readYAML(t, filepath.Join("..", "config", "manager", "kustomization.yaml"), &kust)
	if len(kust.Images) != 1 || kust.Images[0].NewTag != version {
		t.Errorf("config/manager images %+v, Makefile VERSION %s", kust.Images, version)
	}
}

// readYAML decodes a YAML file into v.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// chartKnows reports whether a chart object is the counterpart of one in
// config/.
func chartKnows(key string) bool {
	kind, name, _ := strings.Cut(key, "/")
	for k, n := range chartRoleName {
		if strings.HasPrefix(k, kind+"/") && n == name {
			return true
		}
	}
	return false
}

// rules returns a role's rules in a canonical form: every list sorted, the
// rules sorted.
func rules(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	raw, _, _ := unstructured.NestedSlice(o.Object, "rules")
	var out []string
	for _, r := range raw {
		rule := r.(map[string]any)
		var parts []string
		for _, k := range []string{"apiGroups", "resources", "resourceNames", "nonResourceURLs", "verbs"} {
			vals, _, _ := unstructured.NestedStringSlice(rule, k)
			vals = append([]string(nil), vals...)
			sort.Strings(vals)
			parts = append(parts, fmt.Sprintf("%s=%q", k, vals))
		}
		out = append(out, strings.Join(parts, " "))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// aggregation returns a role's rbac.authorization.k8s.io/aggregate-to-*
// labels.
func aggregation(o *unstructured.Unstructured) map[string]string {
	m := map[string]string{}
	for k, v := range o.GetLabels() {
		if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") {
			m[k] = v
		}
	}
	return m
}

// checkBinding compares a binding of config/ with the chart's: the role it
// binds (by the chart's name) and its subjects.
func checkBinding(t *testing.T, key string, c, h *unstructured.Unstructured) {
	t.Helper()
	cKind, _, _ := unstructured.NestedString(c.Object, "roleRef", "kind")
	cName, _, _ := unstructured.NestedString(c.Object, "roleRef", "name")
	hKind, _, _ := unstructured.NestedString(h.Object, "roleRef", "kind")
	hName, _, _ := unstructured.NestedString(h.Object, "roleRef", "name")
	if want := chartRoleName[cKind+"/"+cName]; hKind != cKind || hName != want {
		t.Errorf("%s binds %s/%s, the chart's %s/%s (want %s/%s)", key, cKind, cName, hKind, hName, cKind, want)
	}
	cs, _, _ := unstructured.NestedSlice(c.Object, "subjects")
	hs, _, _ := unstructured.NestedSlice(h.Object, "subjects")
	if !reflect.DeepEqual(cs, hs) {
		t.Errorf("%s: subjects differ: config/ %v, chart %v", key, cs, hs)
	}
}

// managerContainer returns the Deployment's manager container.
func managerContainer(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	if d == nil {
		t.Fatal("no operator Deployment")
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == "manager" {
			return m
		}
	}
	t.Fatalf("Deployment %s has no manager container", d.GetName())
	return nil
}

// envNames returns the names of the container's environment variables.
func envNames(c map[string]any) map[string]bool {
	m := map[string]bool{}
	env, _ := c["env"].([]any)
	for _, e := range env {
		if n, ok := e.(map[string]any)["name"].(string); ok {
			m[n] = true
		}
	}
	return m
}

// flagSet returns the container's flags that are on: "--name" for
// "--name", "--name=value" and "--name value", except "--name=false".
func flagSet(c map[string]any) map[string]bool {
	m := map[string]bool{}
	args, _ := c["args"].([]any)
	for _, a := range args {
		s, _ := a.(string)
		if !strings.HasPrefix(s, "--") {
			continue
		}
		name, val, _ := strings.Cut(s, "=")
		m[name] = val != "false"
	}
	return m
}

// TestOperatorNetworkPolicy: off by default; when on, it selects only the
// operator's pod and admits its metrics port from metricsFrom alone.
func TestOperatorNetworkPolicy(t *testing.T) {
	if k := byKindName(renderChart(t)); k["NetworkPolicy/summa-operator"] != nil {
		t.Error("the operator's NetworkPolicy renders by default")
	}
	kinds := byKindName(renderChart(t, "--set", "networkPolicy.enabled=true",
		"--set-json", `networkPolicy.metricsFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`))
	np := kinds["NetworkPolicy/summa-operator"]
	if np == nil {
		t.Fatal("no NetworkPolicy with networkPolicy.enabled")
	}
	sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
	if sel["app.kubernetes.io/component"] != "operator" || sel["app.kubernetes.io/name"] != "summa-operator" {
		t.Errorf("podSelector %v", sel)
	}
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	if len(ingress) != 1 {
		t.Fatalf("ingress rules %v", ingress)
	}
	rule := ingress[0].(map[string]any)
	ports := rule["ports"].([]any)
	from := rule["from"].([]any)
	if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["port"]) != "8443" || len(from) != 1 {
		t.Errorf("metrics rule %v", rule)
	}
	types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
	if len(types) != 1 || types[0] != "Ingress" {
		t.Errorf("policyTypes %v: egress must stay open (API server, engines)", types)
	}
}

// TestNamespacedMode: with operator.watchNamespaces the operator's
// ClusterRole is bound only in those namespaces, the only cluster-wide
// binding is to the cluster-scoped rules, and the flag reaches the
// operator.
func TestNamespacedMode(t *testing.T) {
	objs := renderChart(t, "--set", "operator.watchNamespaces={search,team-b}")
	kinds := byKindName(objs)
	if kinds["ClusterRoleBinding/summa-operator"] != nil {
		t.Error("namespaced mode still binds the ClusterRole cluster-wide")
	}
	var bound []string
	for _, obj := range objs {
		if obj.GetKind() == "RoleBinding" && obj.GetName() == "summa-operator" {
			ref, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
			if ref == "summa-operator" {
				bound = append(bound, obj.GetNamespace())
			}
		}
	}
	sort.Strings(bound)
	if strings.Join(bound, ",") != "search,team-b" {
		t.Errorf("the ClusterRole is bound in %v, want search and team-b", bound)
	}
	cluster := kinds["ClusterRole/summa-operator-cluster-scoped"]
	if cluster == nil || kinds["ClusterRoleBinding/summa-operator-cluster-scoped"] == nil {
		t.Fatal("no cluster-scoped role and binding")
	}
	rules, _, _ := unstructured.NestedSlice(cluster.Object, "rules")
	for _, r := range rules {
		res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
		for _, name := range res {
			if name == "customresourcedefinitions" {
				// Reading its own CRD only (the schema revision check).
				if names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames"); strings.Join(names, ",") != "summaindexes.summa.dev" {
					t.Errorf("cluster-wide rule on CRDs %v in namespaced mode, want only summaindexes.summa.dev", names)
				}
				continue
			}
			if name != "storageclasses" && name != "tokenreviews" && name != "subjectaccessreviews" {
				t.Errorf("cluster-wide rule on %s in namespaced mode", name)
			}
		}
	}
	if args := fmt.Sprint(managerContainer(t, kinds["Deployment/summa-operator"])["args"]); !strings.Contains(args, "--watch-namespaces=search,team-b") {
		t.Errorf("args %s", args)
	}
}
