package metadata

import (
	"slices"
	"strings"
	"testing"

	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// TestC02_ValidateRefusesInconsistentGenerationsAtEveryBoundary: a
// generation is accepted exactly up to each limit and refused one past it,
// so a metadata.json that would point the engine at a file set it cannot
// own (an ID at nextId, a mask larger than its segment, a path-like suffix)
// never becomes the committed state.
func TestC02_ValidateRefusesInconsistentGenerationsAtEveryBoundary(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(m *Metadata)
		ok   bool
	}{
		{"id just below nextId", func(m *Metadata) { m.NextID = 0x12 }, true},
		{"id equal to nextId", func(m *Metadata) { m.NextID = 0x11 }, false},
		{"every row deleted", func(m *Metadata) { m.Segments[0].Deletes.Deleted = 5 }, true},
		{"more rows deleted than the segment has", func(m *Metadata) { m.Segments[0].Deletes.Deleted = 6 }, false},
		{"a segment without mask deletes nothing", func(m *Metadata) { m.Segments[0].Deletes = nil; m.Segments[0].Documents = 0 }, true},
		{"empty mask file", func(m *Metadata) { m.Segments[0].Deletes.Size = 0 }, true},
		{"negative mask size", func(m *Metadata) { m.Segments[0].Deletes.Size = -1 }, false},
		{"no unconverged pass", func(m *Metadata) { m.Segments[0].BPUnconvergedPasses = 0 }, true},
		{"negative unconverged passes", func(m *Metadata) { m.Segments[0].BPUnconvergedPasses = -1 }, false},
		{"empty file", func(m *Metadata) { m.Segments[0].Files[0].Size = 0 }, true},
		{"negative file size", func(m *Metadata) { m.Segments[0].Files[0].Size = -1 }, false},
		{"suffix of 16 characters", func(m *Metadata) { m.Segments[0].Files[0].Suffix = strings.Repeat("a", 16) }, true},
		{"suffix of 17 characters", func(m *Metadata) { m.Segments[0].Files[0].Suffix = strings.Repeat("a", 17) }, false},
		{"empty suffix", func(m *Metadata) { m.Segments[0].Files[0].Suffix = "" }, false},
		{"suffix of the extreme characters", func(m *Metadata) { m.Segments[0].Files[0].Suffix = "az09" }, true},
		{"suffix with a backquote (below a)", func(m *Metadata) { m.Segments[0].Files[0].Suffix = "a`" }, false},
		{"suffix with a brace (above z)", func(m *Metadata) { m.Segments[0].Files[0].Suffix = "a{" }, false},
		{"suffix with a slash (below 0)", func(m *Metadata) { m.Segments[0].Files[0].Suffix = "a/" }, false},
		{"suffix with a colon (above 9)", func(m *Metadata) { m.Segments[0].Files[0].Suffix = "a:" }, false},
		{"suffix listed twice", func(m *Metadata) { m.Segments[0].Files[1].Suffix = "post" }, false},
	} {
		m := sample()
		c.edit(m)
		err := m.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", c.name, err, c.ok)
		}
	}
	// A refused suffix is quoted clipped to 40 bytes.
	m := sample()
	m.Segments[0].Files[0].Suffix = strings.Repeat("x", 40) + "/"
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), `"`+strings.Repeat("x", 40)+`..."`) {
		t.Errorf("a 41-byte suffix: %v, want it clipped to 40 bytes", err)
	}
	m.Segments[0].Files[0].Suffix = strings.Repeat("x", 39) + "/"
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), `"`+strings.Repeat("x", 39)+`/"`) {
		t.Errorf("a 40-byte suffix: %v, want it quoted whole", err)
	}
}

// TestL01_GenerationIDsListEverySegmentAndMask: the metadata owner holds
// exactly the IDs a generation references (segments and their masks), and
// a clone edits none of the original's masks or file lists.
func TestL01_GenerationIDsListEverySegmentAndMask(t *testing.T) {
	m := sample()
	m.Segments = append(m.Segments, Segment{Info: segment.Info{ID: 0x4, Documents: 3}})
	m.NextID = 0x13
	if got := m.IDs(); !slices.Equal(got, []segid.ID{0x10, 0x11, 0x4}) {
		t.Fatalf("IDs() = %v, want [10 11 4]", got)
	}
	if got := m.Segments[0].LiveDocuments(); got != 3 {
		t.Fatalf("LiveDocuments with 2 of 5 deleted = %d", got)
	}
	if got := m.Segments[1].LiveDocuments(); got != 3 {
		t.Fatalf("LiveDocuments without a mask = %d, want 3", got)
	}
	c := m.Clone()
	c.Segments[0].Deletes.Deleted = 4
	c.Segments[0].Files[0].Size = 99
	if m.Segments[0].Deletes.Deleted != 2 || m.Segments[0].Files[0].Size != 10 {
		t.Fatal("editing a clone changed the original's mask or files")
	}
	if c.Segments[1].Deletes != nil {
		t.Fatal("clone gave a mask to a segment without one")
	}
}
