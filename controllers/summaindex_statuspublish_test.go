package controllers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// publishFixture is a status watch's writer on a fake API server holding
// one running index, recording each status patch's body.
type publishFixture struct {
	s       *statusWatches
	c       client.Client
	key     types.NamespacedName
	patches []map[string]any
	// conflicts is how many of the next status patches answer a conflict.
	conflicts int
}

// newPublishFixture returns the fixture, the index on pod "pod-1".
func newPublishFixture(t *testing.T) *publishFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := summav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := &publishFixture{key: types.NamespacedName{Namespace: "ns", Name: "idx"}}
	x := &summav1.SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: f.key.Name, Namespace: f.key.Namespace},
		Status: summav1.SummaIndexStatus{PodUID: "pod-1", Documents: 10, Generation: 3, Segments: 1}}
	f.c = fake.NewClientBuilder().WithScheme(scheme).WithObjects(x).WithStatusSubresource(x).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				data, err := patch.Data(obj)
				if err != nil {
					return err
				}
				var body map[string]any
				if err := json.Unmarshal(data, &body); err != nil {
					return err
				}
				if f.conflicts > 0 {
					f.conflicts--
					return apierrors.NewConflict(schema.GroupResource{Group: "summa.dev", Resource: "summaindexes"}, obj.GetName(), nil)
				}
				f.patches = append(f.patches, body)
				return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	clock := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	f.s = newStatusWatches(4, logr.Discard(), f.c, f.c, clock)
	return f
}

// status reads the index's status from the fake API server.
func (f *publishFixture) status(t *testing.T) summav1.SummaIndexStatus {
	t.Helper()
	x := &summav1.SummaIndex{}
	if err := f.c.Get(context.Background(), f.key, x); err != nil {
		t.Fatal(err)
	}
	return x.Status
}

// TestStatusPublishWritesOnlyChangedFigures: the watch writes a commit's
// figures with one merge patch of only those fields and the
// resourceVersion; the same answer again writes nothing, and a plain
// commit asks for no reconcile pass.
func TestStatusPublishWritesOnlyChangedFigures(t *testing.T) {
	f := newPublishFixture(t)
	ctx := context.Background()
	st := &engineclient.IndexStatus{Generation: 4, Documents: 12, Segments: make([]engineclient.SegmentStatus, 2)}
	pass, err := f.s.publish(ctx, f.key, "pod-1", st)
	if err != nil || pass {
		t.Fatalf("publish: pass %v, error %v; want no pass, no error", pass, err)
	}
	if len(f.patches) != 1 {
		t.Fatalf("%d status patches, want 1", len(f.patches))
	}
	body := f.patches[0]
	meta, _ := body["metadata"].(map[string]any)
	if meta["resourceVersion"] == nil || len(meta) != 1 {
		t.Errorf("patch metadata %v: want the resourceVersion alone", meta)
	}
	status, _ := body["status"].(map[string]any)
	for _, k := range []string{"documents", "generation", "segments", "lastObservedTime"} {
		if _, ok := status[k]; !ok {
			t.Errorf("patch status %v lacks %s", status, k)
		}
	}
	if len(status) != 4 || len(body) != 2 {
		t.Errorf("patch %v: want only metadata.resourceVersion and the four changed status fields", body)
	}
	got := f.status(t)
	if got.Documents != 12 || got.Generation != 4 || got.Segments != 2 || got.LastObservedTime == nil {
		t.Errorf("status after the patch: %+v", got)
	}
	if _, err := f.s.publish(ctx, f.key, "pod-1", st); err != nil {
		t.Fatal(err)
	}
	if len(f.patches) != 1 {
		t.Errorf("%d status patches after the same answer again, want still 1 (no write at rest)", len(f.patches))
	}
}

// TestStatusPublishHandsOverToThePass: an answer that changes the
// quarantine is written and wakes a pass (conditions, events); an answer
// of another pod than status names is not written; a conflict is read
// again and written.
func TestStatusPublishHandsOverToThePass(t *testing.T) {
	f := newPublishFixture(t)
	ctx := context.Background()
	st := &engineclient.IndexStatus{Generation: 4, Documents: 10, Segments: make([]engineclient.SegmentStatus, 1),
		Quarantined: []engineclient.QuarantinedSegment{{Segment: "seg-9", Reason: "checksum"}}}
	pass, err := f.s.publish(ctx, f.key, "pod-1", st)
	if err != nil || !pass {
		t.Fatalf("publish of a quarantine: pass %v, error %v; want a pass", pass, err)
	}
	if got := f.status(t); got.QuarantinedSegmentCount != 1 || len(got.QuarantinedSegments) != 1 || got.QuarantinedSegments[0].ID != "seg-9" {
		t.Errorf("status after a quarantine: %+v", got)
	}
	n := len(f.patches)
	st.Generation, st.Documents = 5, 11
	if pass, err := f.s.publish(ctx, f.key, "pod-2", st); err != nil || !pass || len(f.patches) != n {
		t.Errorf("publish for another pod: pass %v, error %v, %d patches (want a pass and still %d)", pass, err, len(f.patches), n)
	}
	f.conflicts = 1
	if _, err := f.s.publish(ctx, f.key, "pod-1", st); err != nil {
		t.Fatal(err)
	}
	if got := f.status(t); got.Generation != 5 || got.Documents != 11 {
		t.Errorf("status after a conflict and a retry: %+v", got)
	}
}
