package segment

import (
	"context"
	"testing"
)

// TestSuperblocksCoverTheirBlocks checks every record of the Opticks
// segment with a superblock table: the groups' blocks, decoded group by
// group, are exactly the record's entries; each group's codes bound every
// block in it; and only records of text and exact fields of at least
// superMinBlocks blocks, superDensity per group, have a table.
func TestSuperblocksCoverTheirBlocks(t *testing.T) {
	r, _, s, _ := blockMaxSegmentOf(t, 3)
	withSupers := 0
	for field, f := range r.bmax {
		if f == nil {
			continue
		}
		for o := range f.numTerms {
			rec, err := f.record(r.id, o)
			if err != nil {
				t.Fatal(err)
			}
			bt, err := parseBlockTerm(rec, f.bmLayout, 0, r.numDocs, r.id)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := bt.Entries(nil)
			if err != nil {
				t.Fatal(err)
			}
			groups := map[uint32]bool{}
			for _, e := range entries {
				groups[e.Block>>SuperShift] = true
			}
			want := f.kind != bmSparse && bt.nBlocks >= superMinBlocks && len(groups)*superDensity <= bt.nBlocks
			if bt.HasSupers() != want {
				t.Fatalf("field %s term %d: %d blocks in %d groups, table %v", s.Fields[field].Name, o, bt.nBlocks, len(groups), bt.HasSupers())
			}
			if !bt.HasSupers() {
				continue
			}
			withSupers++
			supers, err := bt.Supers(nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []BlockEntry
			for i := range supers {
				g := &supers[i]
				start := len(got)
				if got, err = bt.SuperBlocks(g, got); err != nil {
					t.Fatal(err)
				}
				if len(got)-start != g.Count {
					t.Fatalf("group %d: %d blocks decoded, %d counted", g.Block, len(got)-start, g.Count)
				}
				for _, e := range got[start:] {
					if e.Block>>SuperShift != g.Block || looserHi(g.Hi, e.Hi) != g.Hi || g.Lo > e.Lo || g.Mix > e.Mix {
						t.Fatalf("group %+v does not bound block %+v", g.BlockEntry, e)
					}
				}
			}
			if len(got) != len(entries) {
				t.Fatalf("field %d term %d: %d blocks in groups, %d entries", field, o, len(got), len(entries))
			}
			for i := range got {
				if got[i] != entries[i] {
					t.Fatalf("field %d term %d block %d: %+v by group, %+v by entries", field, o, i, got[i], entries[i])
				}
			}
		}
	}
	if withSupers == 0 {
		t.Fatal("no record has a superblock table")
	}
}

// TestReadsVersion3BlockMax rewrites a segment's bmp file in format
// version 3 (no superblock tables): it opens and validates, a frequent
// term's record has no table and the same blocks, and a merge rewrites it
// in the current version with tables.
func TestReadsVersion3BlockMax(t *testing.T) {
	r, fs, s, info := blockMaxSegmentOf(t, 3)
	r3 := openAtVersion(t, fs, r, info, mixBlockMaxVersion)
	body := fieldOrd(s, "body")
	bt3, err := r3.BlockMaxTerm(body, "the")
	if err != nil || bt3 == nil {
		t.Fatalf("term the: %v", err)
	}
	bt, err := r.BlockMaxTerm(body, "the")
	if err != nil || bt == nil {
		t.Fatalf("term the: %v", err)
	}
	if bt3.HasSupers() || !bt.HasSupers() {
		t.Fatalf("superblock tables: version 3 %v, current %v", bt3.HasSupers(), bt.HasSupers())
	}
	e3, err3 := bt3.Entries(nil)
	e, err := bt.Entries(nil)
	if err != nil || err3 != nil || len(e) != len(e3) {
		t.Fatalf("entries: %d (%v) and %d (%v)", len(e), err, len(e3), err3)
	}
	checkTermBlocks(t, r3, &s.Fields[body], body, "the")
	rm := mergeToCurrent(t, fs, s, r3, 0x93)
	if bm, err := rm.BlockMaxTerm(body, "the"); err != nil || bm == nil || !bm.HasSupers() {
		t.Fatalf("merged record of the: %v", err)
	}
}

// TestSuperblockDamageDetected changes each byte of a frequent term's
// superblock table in turn: Validate finds every change, and a search's
// decoding of the table never reads outside the record.
func TestSuperblockDamageDetected(t *testing.T) {
	r, fs, s, info := blockMaxSegmentOf(t, 3)
	body := fieldOrd(s, "body")
	bt, err := r.BlockMaxTerm(body, "the")
	if err != nil || bt == nil || !bt.HasSupers() {
		t.Fatalf("term the: %v", err)
	}
	orig := r.file(SuffixBlockMax).data
	start := headerSize + uintptrOffset(r.file(SuffixBlockMax).payload, bt.supers)
	for i := range bt.supers {
		bad := append([]byte(nil), orig...)
		bad[start+i] ^= 0x21
		_, r2, err := withBlockMax(t, fs, r, info, fixFrame(bad))
		if err != nil {
			wantCorruption(t, err, "superblock byte damaged")
			continue
		}
		if b2, err := r2.BlockMaxTerm(body, "the"); err == nil && b2 != nil {
			if gs, err := b2.Supers(nil); err == nil {
				for k := range gs {
					_, _ = b2.SuperBlocks(&gs[k], nil) // must not panic
				}
			}
		}
		wantCorruption(t, r2.Validate(context.Background()), "superblock byte damaged")
		r2.Close()
	}
}
