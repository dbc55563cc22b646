// Package v1 contains the API of the summa.dev/v1 group: the SummaIndex
// resource, one search index served by one summa-server pod on its own
// volume, reconciled by the Summa operator.
//
// The resource is described in docs/api.md; the engine schema it carries is
// the engine's (docs/server.md). Validation that the
// API server can do itself (types, enums, bounds, immutability, relations
// between fields) is expressed here as OpenAPI and CEL markers, so that a
// bad spec is refused at admission and never reaches the operator.
//
// +kubebuilder:object:generate=true
// +groupName=summa.dev
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "summa.dev", Version: "v1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// AnnotationCRDRevision on the SummaIndex CRD (set by the
// +kubebuilder:metadata:annotations marker of SummaIndex) counts the
// revisions of its schema. An operator needs at least CRDRevision: an older
// CRD would silently prune the status fields it writes, so the manager
// refuses to start against one (Helm never upgrades a chart's crds/).
const AnnotationCRDRevision = "summa.dev/crd-revision"

// CRDRevision is the schema revision of the CRD this API needs. Raise it
// with the marker whenever a field is added, and the test in api/v1 checks
// that both agree.
const CRDRevision = 6
