package controllers

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/summadev/summa/internal/argohealth"
)

// The Argo CD health check of config/argocd/health.lua, run as Argo CD runs
// it (internal/argohealth: gopher-lua, the interpreter Argo CD embeds).

// argoHealthScript is the health check as shipped.
const argoHealthScript = "../config/argocd/health.lua"

// argoCMPatch is the argocd-cm patch that carries the same script.
const argoCMPatch = "../config/argocd/argocd-cm.yaml"

// argoHealthKey is Argo CD's key of the health check of a SummaIndex.
const argoHealthKey = "resource.customizations.health.summa.dev_SummaIndex"

// argoHealth is a verdict of the health check.
type argoHealth = argohealth.Health

// runArgoHealth runs script over obj.
func runArgoHealth(script string, obj map[string]any) (argoHealth, error) {
	return argohealth.Run(script, obj)
}

// argoScript reads the shipped script.
func argoScript() string {
	b, err := os.ReadFile(argoHealthScript)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// recordedStatus is a SummaIndex as the API server served it at one step
// of the kstatus specs (kstatus_env_test.go), with the verdicts then.
type recordedStatus struct {
	// Step names the step of the spec.
	Step string `json:"step"`
	// Kstatus is what status.Compute said.
	Kstatus string `json:"kstatus"`
	// Argo is the health check's status.
	Argo string `json:"argo"`
	// Object is the SummaIndex.
	Object map[string]any `json:"object"`
}

// recordedDir holds the statuses recorded by the kstatus specs.
const recordedDir = "testdata/kstatus"

// TestArgoHealthOnRecordedStatuses runs the health check and kstatus over
// the statuses the envtest specs recorded at each step (creation, a
// drained restart, a doctor run, a refused change, suspension) and checks
// each verdict, and that the two agree.
func TestArgoHealthOnRecordedStatuses(t *testing.T) {
	script := argoScript()
	files, err := filepath.Glob(filepath.Join(recordedDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no recorded statuses in %s", recordedDir)
	}
	sort.Strings(files)
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec recordedStatus
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// As a client decodes it: integers as int64.
		u := &unstructured.Unstructured{}
		raw, _ := json.Marshal(rec.Object)
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rec.Object = u.Object
		h, err := runArgoHealth(script, rec.Object)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if h.Status != rec.Argo {
			t.Errorf("%s (%s): health %s (%q), recorded %s", f, rec.Step, h.Status, h.Message, rec.Argo)
		}
		res, err := kstatus.Compute(&unstructured.Unstructured{Object: rec.Object})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if string(res.Status) != rec.Kstatus {
			t.Errorf("%s (%s): kstatus %s (%s), recorded %s", f, rec.Step, res.Status, res.Message, rec.Kstatus)
		}
		if err := agree(res.Status, h, rec.Object); err != nil {
			t.Errorf("%s (%s): %v", f, rec.Step, err)
		}
		seen[rec.Kstatus+"/"+rec.Argo] = true
	}
	// The recording covers every verdict the two give a SummaIndex.
	for _, want := range []string{"InProgress/Progressing", "Current/Healthy", "Failed/Degraded", "InProgress/Suspended"} {
		if !seen[want] {
			t.Errorf("no recorded status reads %s", want)
		}
	}
}

// agree checks that Argo CD's verdict h and kstatus' s tell the same:
// Degraded exactly when Failed, Healthy exactly when Current, Suspended
// only for a suspended index.
func agree(s kstatus.Status, h argoHealth, obj map[string]any) error {
	suspend, _, _ := unstructured.NestedBool(obj, "spec", "suspend")
	ok := false
	switch s {
	case kstatus.FailedStatus:
		ok = h.Status == "Degraded"
	case kstatus.CurrentStatus:
		ok = h.Status == "Healthy"
	case kstatus.InProgressStatus:
		ok = h.Status == "Progressing" || (suspend && h.Status == "Suspended")
	case kstatus.TerminatingStatus:
		ok = h.Status == "Progressing"
	}
	if !ok {
		return fmt.Errorf("kstatus %s but Argo CD %s (%s)", s, h.Status, h.Message)
	}
	return nil
}

// TestArgoHealthCases covers what the recording cannot: a status of an
// older operator (no Reconciling), an object no operator saw (no status at
// all, as a client that does not default it shows it), one being deleted.
func TestArgoHealthCases(t *testing.T) {
	script := argoScript()
	cond := func(t, s, reason string) map[string]any {
		return map[string]any{"type": t, "status": s, "reason": reason, "message": reason + " message"}
	}
	obj := func(gen int64, suspend bool, observed any, conds ...map[string]any) map[string]any {
		status := map[string]any{}
		if observed != nil {
			status["observedGeneration"] = observed
		}
		if len(conds) > 0 {
			cs := []any{}
			for _, c := range conds {
				cs = append(cs, c)
			}
			status["conditions"] = cs
		}
		return map[string]any{"apiVersion": "summa.dev/v1", "kind": "SummaIndex",
			"metadata": map[string]any{"name": "x", "generation": gen},
			"spec":     map[string]any{"suspend": suspend}, "status": status}
	}
	for _, c := range []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"no status", map[string]any{"metadata": map[string]any{"generation": int64(1)}, "spec": map[string]any{}}, "Progressing"},
		{"status defaulted, no pass yet", obj(1, false, int64(0)), "Progressing"},
		{"old generation observed", obj(2, false, int64(1), cond("Ready", "True", "EngineReady")), "Progressing"},
		{"older operator, ready", obj(1, false, int64(1), cond("Ready", "True", "EngineReady")), "Healthy"},
		{"ready", obj(3, false, int64(3), cond("Ready", "True", "EngineReady"), cond("Reconciling", "False", ReasonReconciled),
			cond("Stalled", "False", ReasonNotStalled)), "Healthy"},
		{"restart queued while ready", obj(3, false, int64(3), cond("Ready", "True", "EngineReady"),
			cond("Reconciling", "True", ReasonRestartQueued)), "Progressing"},
		{"stalled while ready", obj(3, false, int64(3), cond("Ready", "True", "EngineReady"),
			cond("Stalled", "True", ReasonInvalidPodTemplate)), "Degraded"},
		{"stalled, then a new generation the operator did not see yet", obj(4, false, int64(3), cond("Stalled", "True", ReasonDrainTimeout)), "Progressing"},
		{"suspending", obj(2, true, int64(2), cond("Ready", "False", "PodStopping"), cond("Reconciling", "True", "PodStopping")), "Progressing"},
		{"suspended", obj(2, true, int64(2), cond("Ready", "False", "Suspended"), cond("Reconciling", "False", "Suspended")), "Suspended"},
		{"suspended and stalled", obj(2, true, int64(2), cond("Stalled", "True", ReasonDrainTimeout)), "Degraded"},
		{"not ready, no reason to give up", obj(2, false, int64(2), cond("Ready", "False", "PodNotReady")), "Progressing"},
		{"float generation (JSON numbers)", obj(2, false, float64(2), cond("Ready", "True", "EngineReady")), "Healthy"},
	} {
		h, err := runArgoHealth(script, c.obj)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if h.Status != c.want {
			t.Errorf("%s: %s (%q), want %s", c.name, h.Status, h.Message, c.want)
		}
		if h.Message == "" {
			t.Errorf("%s: no message", c.name)
		}
	}
	deleting := obj(1, false, int64(1), cond("Ready", "True", "EngineReady"))
	deleting["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	if h, err := runArgoHealth(script, deleting); err != nil || h.Status != "Progressing" {
		t.Errorf("deleting: %+v %v", h, err)
	}
}

// TestArgoCMPatchCarriesTheScript checks that the argocd-cm patch holds
// the script exactly, under Argo CD's key.
func TestArgoCMPatchCarriesTheScript(t *testing.T) {
	b, err := os.ReadFile(argoCMPatch)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Kind     string            `json:"kind"`
		Metadata map[string]any    `json:"metadata"`
		Data     map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Kind != "ConfigMap" || cm.Metadata["name"] != "argocd-cm" {
		t.Fatalf("%s is not the argocd-cm ConfigMap: %s %v", argoCMPatch, cm.Kind, cm.Metadata["name"])
	}
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	if !slices.Equal(keys, []string{argoHealthKey}) {
		t.Fatalf("data keys %v, want [%s]", keys, argoHealthKey)
	}
	if got, want := strings.TrimSpace(cm.Data[argoHealthKey]), strings.TrimSpace(argoScript()); got != want {
		t.Errorf("the script in %s differs from %s: copy the script into it", argoCMPatch, argoHealthScript)
	}
}
