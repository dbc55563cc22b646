package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	summav1 "github.com/summadev/summa/api/v1"
)

// The finalizer is added and removed with a merge patch that carries the
// resourceVersion read (optimistic locking). A plain merge patch replaces
// the whole metadata.finalizers list, so it would silently drop a finalizer
// another controller (or the API server's orphan and foreground
// finalizers) added after the read; with the lock such a patch fails with
// a conflict and the next pass reads again.

// addFinalizer adds summa.dev/deletion to index.
func addFinalizer(ctx context.Context, c client.Client, index *summav1.SummaIndex) error {
	patch := client.MergeFromWithOptions(index.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(index, summav1.Finalizer)
	if err := c.Patch(ctx, index, patch); err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	return nil
}

// removeFinalizer removes summa.dev/deletion from index; index being gone already
// is not an error.
func removeFinalizer(ctx context.Context, c client.Client, index *summav1.SummaIndex) error {
	patch := client.MergeFromWithOptions(index.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(index, summav1.Finalizer)
	if err := c.Patch(ctx, index, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}
