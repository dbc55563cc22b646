package controllers

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// SummaIndexCRDName is the name of the SummaIndex CustomResourceDefinition.
const SummaIndexCRDName = "summaindexes.summa.dev"

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=summaindexes.summa.dev

// ErrCRDUnreadable wraps the answer of an API server that does not let the
// operator read the CRD (the namespaced install without that right): the
// caller logs it and goes on, since nothing can be checked.
var ErrCRDUnreadable = fmt.Errorf("the SummaIndex CRD cannot be read")

// CheckCRDRevision refuses an installed SummaIndex CRD older than this
// operator needs (its summa.dev/crd-revision annotation below
// summav1.CRDRevision, or none): against it, the API server would prune
// the fields this operator writes, without an error. Helm never upgrades
// the CRDs of a chart's crds/ directory, which is how this happens.
func CheckCRDRevision(ctx context.Context, c client.Reader) error {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := c.Get(ctx, client.ObjectKey{Name: SummaIndexCRDName}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("CRD %s is not installed: install it (make install, install.yaml or the Helm chart) before the operator", SummaIndexCRDName)
		}
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("%w: %v", ErrCRDUnreadable, err)
		}
		return fmt.Errorf("read CRD %s: %w", SummaIndexCRDName, err)
	}
	v := crd.Annotations[summav1.AnnotationCRDRevision]
	have, err := strconv.Atoi(v)
	if err != nil || have < summav1.CRDRevision {
		if v == "" {
			v = "none"
		}
		return fmt.Errorf("CRD %s has schema revision %s (annotation %s) but this operator needs %d: "+
			"upgrade the CRD first (kubectl apply --server-side -f the release's CRD, or helm upgrade of a chart that installs CRDs from templates/)",
			SummaIndexCRDName, v, summav1.AnnotationCRDRevision, summav1.CRDRevision)
	}
	return nil
}
