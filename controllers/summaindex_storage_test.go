package controllers

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/client"
)

// TestStorageFullCauses: the engine's storage report becomes
// Degraded=StorageFull with the figures while the engine refuses writes,
// and nothing otherwise.
func TestStorageFullCauses(t *testing.T) {
	r := &SummaIndexReconciler{}
	x := &summav1.SummaIndex{}
	r.observeStorage(x, nil, &client.StorageStatus{FreeBytes: 1 << 30, UsedBytes: 3 << 30})
	if x.Status.Storage != nil || len(storageCauses(x)) != 0 {
		t.Fatalf("a volume with space: %+v", x.Status.Storage)
	}
	x.Status.Storage = &summav1.EngineStorage{FreeBytes: 12 << 20, UsedBytes: 1012 << 20, Full: true}
	cs := storageCauses(x)
	if len(cs) != 1 || cs[0].reason != ReasonStorageFull ||
		!strings.Contains(cs[0].message, "12Mi free, 1012Mi used") || !strings.Contains(cs[0].message, "507 StorageFull") {
		t.Fatalf("causes of a full volume: %+v", cs)
	}
	setDegraded(x, degradedCauses(x, nil))
	if c := x.GetCondition(summav1.ConditionDegraded); c == nil || c.Reason != ReasonStorageFull {
		t.Fatalf("Degraded: %+v", c)
	}
	r.observeStorage(x, nil, nil)
	if x.Status.Storage != nil {
		t.Fatal("an engine without a storage report left the figures in status")
	}
}

// TestMinFreeBytesArg: spec.engine.minFreeBytes is the engine's
// --min-free-bytes, 0 included; unset passes nothing.
func TestMinFreeBytesArg(t *testing.T) {
	var e summav1.EngineSpec
	for _, a := range e.Args() {
		if strings.HasPrefix(a, "--min-free-bytes") {
			t.Fatalf("unset minFreeBytes passed %s", a)
		}
	}
	for q, want := range map[string]string{"0": "--min-free-bytes=0", "512Mi": "--min-free-bytes=536870912"} {
		v := resource.MustParse(q)
		e.MinFreeBytes = &v
		found := false
		for _, a := range e.Args() {
			found = found || a == want
		}
		if !found {
			t.Errorf("minFreeBytes %s: args %v lack %s", q, e.Args(), want)
		}
	}
}
