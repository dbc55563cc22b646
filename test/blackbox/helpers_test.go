package blackbox

import "testing"

// TestHelpers checks the harness's own parsing; it needs no binary.
func TestHelpers(t *testing.T) {
	md, err := parseMetadata([]byte(`{"version":1,"generation":4,"nextId":"1f","schema":{},
	 "segments":[{"id":"3","documents":30,"files":[{"suffix":"fwd","size":1}],"deletes":{"id":"1c","deleted":4,"size":96}},
	             {"id":"1d","documents":12,"files":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	live := md.LiveIDs()
	if md.Generation != 4 || len(live) != 3 || !live["3"] || !live["1c"] || !live["1d"] || md.Documents["3"] != 30 {
		t.Fatalf("parseMetadata: %+v", md)
	}
	for name, want := range map[string]bool{
		"seg_ff.legacy-partial": true, "seg_abc.tmp": true, "seg_1c.del": true,
		"notes.txt": false, "seg_XYZ.post": false, "seg_1A.post": false, "seg_.post": false, "seg_12": false,
		"seg_ff.": false, "seg_12345678901234567.post": false,
	} {
		if _, _, ok := parseSegFile(name); ok != want {
			t.Errorf("parseSegFile(%q) ok=%v, want %v", name, ok, want)
		}
	}
	if got := tokens("Newton's Opticks, 1704: light-rays"); len(got) != 6 || got[0] != "newton" || got[5] != "rays" {
		t.Errorf("tokens: %q", got)
	}
	a := state{"a": 1, "b": 2}
	b := a.apply([]op{{pk: "a", delete: true}, {pk: "c", n: 3}, {pk: "b", n: 5}})
	if !b.equal(state{"b": 5, "c": 3}) || !a.equal(state{"a": 1, "b": 2}) {
		t.Errorf("apply: %v from %v", b, a)
	}
}
