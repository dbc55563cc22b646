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
	for _, f := range []string{"summa.dev_summaindexes.yaml", "summa.dev_summaindexbackups.yaml"} {
		b, err := os.ReadFile("../../config/crd/bases/" + f)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(AnnotationCRDRevision) + `: "(\d+)"$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no %s annotation: run make manifests", f, AnnotationCRDRevision)
		}
		if got, _ := strconv.Atoi(string(m[1])); got != CRDRevision {
			t.Fatalf("%s: the marker says revision %d, CRDRevision is %d: raise them together", f, got, CRDRevision)
		}
	}
}
