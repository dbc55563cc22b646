package v1

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The CRD that controller-gen writes carries the revision this API needs:
// the marker on SummaIndex and CRDRevision move together.
func TestCRDCarriesTheRevisionThisAPINeeds(t *testing.T) {
	b, err := os.ReadFile("../../config/crd/bases/summa.dev_summaindexes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(AnnotationCRDRevision) + `: "(\d+)"$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("the generated CRD has no %s annotation: run make manifests", AnnotationCRDRevision)
	}
	if got, _ := strconv.Atoi(string(m[1])); got != CRDRevision {
		t.Fatalf("the CRD's marker says revision %d, CRDRevision is %d: raise both together", got, CRDRevision)
	}
}
