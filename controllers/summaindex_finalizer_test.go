package controllers

import (
	"context"
	"encoding/json"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	summav1 "github.com/summadev/summa/api/v1"
)

// TestFinalizerPatchesCarryTheResourceVersion: adding and removing the
// finalizer sends a merge patch with the resourceVersion read, so that a
// finalizer someone else added since (the API server's orphan finalizer,
// another controller's) is never overwritten: the patch conflicts instead.
func TestFinalizerPatchesCarryTheResourceVersion(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := summav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	x := &summav1.SummaIndex{ObjectMeta: metav1.ObjectMeta{Name: "fin", Namespace: "ns", Finalizers: []string{"other.example/keep"}}}
	var patches []map[string]any
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(x).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			var body map[string]any
			if err := json.Unmarshal(data, &body); err != nil {
				return err
			}
			patches = append(patches, body)
			return cl.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	ctx := context.Background()
	cur := &summav1.SummaIndex{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(x), cur); err != nil {
		t.Fatal(err)
	}
	stale := cur.DeepCopy()
	if err := addFinalizer(ctx, c, cur); err != nil {
		t.Fatal(err)
	}
	if err := removeFinalizer(ctx, c, stale); !apierrors.IsConflict(err) {
		t.Fatalf("removing the finalizer from a stale read: %v, want a conflict", err)
	}
	if err := removeFinalizer(ctx, c, cur); err != nil {
		t.Fatal(err)
	}
	for i, p := range patches {
		meta, _ := p["metadata"].(map[string]any)
		if rv, _ := meta["resourceVersion"].(string); rv == "" {
			t.Errorf("patch %d carries no resourceVersion: %v", i, p)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(x), cur); err != nil {
		t.Fatal(err)
	}
	if len(cur.Finalizers) != 1 || cur.Finalizers[0] != "other.example/keep" {
		t.Fatalf("finalizers %v, want only the other controller's", cur.Finalizers)
	}
}
