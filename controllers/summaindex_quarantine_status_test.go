package controllers

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/client"
)

// A badly damaged index must not grow status without bound: the list keeps
// the first MaxQuarantinedSegments by ID with short reasons, the count is
// exact.
func TestQuarantinedSegmentsInStatusAreBounded(t *testing.T) {
	var q []client.QuarantinedSegment
	for i := 5000; i > 0; i-- {
		q = append(q, client.QuarantinedSegment{Segment: fmt.Sprintf("%08x", i), Reason: strings.Repeat("é", 1000)})
	}
	got, n := quarantinedSegments(q)
	if n != 5000 {
		t.Fatalf("count %d, want 5000", n)
	}
	if len(got) != summav1.MaxQuarantinedSegments {
		t.Fatalf("%d entries, want %d", len(got), summav1.MaxQuarantinedSegments)
	}
	if got[0].ID != "00000001" || got[len(got)-1].ID != fmt.Sprintf("%08x", summav1.MaxQuarantinedSegments) {
		t.Errorf("not the first by ID: %s .. %s", got[0].ID, got[len(got)-1].ID)
	}
	for _, s := range got {
		if len(s.Reason) > summav1.MaxQuarantineReasonLength || !utf8.ValidString(s.Reason) {
			t.Fatalf("reason of %d bytes (valid UTF-8: %v)", len(s.Reason), utf8.ValidString(s.Reason))
		}
	}
	if got, n := quarantinedSegments(nil); got != nil || n != 0 {
		t.Errorf("empty quarantine gave %v, %d", got, n)
	}
	few := []client.QuarantinedSegment{{Segment: "b", Reason: "checksum mismatch"}, {Segment: "a", Reason: "short read"}}
	if got, n := quarantinedSegments(few); n != 2 || got[0].ID != "a" || got[1].Reason != "checksum mismatch" {
		t.Errorf("two segments gave %+v, %d", got, n)
	}
}
