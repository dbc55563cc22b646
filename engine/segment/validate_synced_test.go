package segment

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/segid"
)

// damageAtSync counts the fsyncs of the compound file and, when armed,
// flips a byte in its middle as the first of them starts: bytes damaged
// after the write, while OpenValidated's structure checks may already
// have read them.
type damageAtSync struct {
	mu     sync.Mutex
	mem    *vfs.MemFS
	armed  bool
	syncs  int
	damage error
}

func (d *damageAtSync) MaybeError(op errorfs.Op) error {
	if op.Kind != errorfs.OpFileSync || !strings.HasSuffix(op.Path, "."+SuffixCompound) {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncs++
	if !d.armed {
		return nil
	}
	d.armed = false
	f, err := d.mem.OpenReadWrite(op.Path, vfs.WriteCategoryUnspecified)
	if err != nil {
		d.damage = err
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		d.damage = err
		return nil
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()/2); err != nil {
		d.damage = err
		return nil
	}
	b[0] ^= 0xff
	_, d.damage = f.WriteAt(b, st.Size()/2)
	return nil
}

func (d *damageAtSync) String() string { return "damageAtSync" }

// TestOpenValidatedSyncsAndChecksBytesAfterSync: a merge written with
// MergeOptions.Unsynced makes no fsync; OpenValidated syncs the output
// once and returns it open with every row; an output whose bytes change
// during that sync (after the write) fails with a checksum error.
func TestOpenValidatedSyncsAndChecksBytesAfterSync(t *testing.T) {
	s := testSchema()
	mem := vfs.NewMem()
	inj := &damageAtSync{mem: mem}
	fs := errorfs.Wrap(mem, inj)
	srcs := mergeSources(t, fs, s)
	ctx := context.Background()
	for _, damaged := range []bool{false, true} {
		id := segid.ID(200)
		if damaged {
			id = 201
		}
		info, err := MergeWith(ctx, fs, "idx", id, s, srcs, Concat(srcs, nil), MergeOptions{SeismicBudget: -1, Unsynced: true})
		if err != nil {
			t.Fatal(err)
		}
		inj.mu.Lock()
		if inj.syncs != 0 {
			t.Fatalf("an unsynced merge made %d fsyncs of its output", inj.syncs)
		}
		inj.armed = damaged
		inj.mu.Unlock()
		r, err := OpenValidated(ctx, fs, "idx", s, info)
		inj.mu.Lock()
		syncs, derr := inj.syncs, inj.damage
		inj.syncs = 0
		inj.mu.Unlock()
		if derr != nil {
			t.Fatal(derr)
		}
		if syncs != 1 {
			t.Fatalf("OpenValidated made %d fsyncs of the output, want 1", syncs)
		}
		if !damaged {
			if err != nil {
				t.Fatalf("OpenValidated of a sound merge: %v", err)
			}
			if r.NumDocs() != info.Documents {
				t.Fatalf("reader holds %d rows, want %d", r.NumDocs(), info.Documents)
			}
			r.Close()
			continue
		}
		if err == nil {
			r.Close()
			t.Fatal("an output damaged during its sync validated")
		}
		if !strings.Contains(err.Error(), "CRC mismatch") {
			t.Fatalf("damage during the sync reported as %v, want a CRC mismatch", err)
		}
	}
}
