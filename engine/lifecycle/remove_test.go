package lifecycle

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/segid"
)

// failRemoves fails every Remove of a path ending in one of its suffixes.
type failRemoves []string

func (f failRemoves) MaybeError(op errorfs.Op) error {
	if op.Kind != errorfs.OpRemove {
		return nil
	}
	for _, s := range f {
		if strings.HasSuffix(op.Path, s) {
			return errorfs.ErrInjected
		}
	}
	return nil
}

func (f failRemoves) String() string { return "failRemoves" }

// TestRemoveFilesEveryFileFirstFailurePerID removes the files of a few
// IDs (in order) and of many (concurrently): every file of every ID goes,
// whatever its suffix, other files stay, and an ID whose removals fail
// reports a failing file (the first in listing order), the others
// nothing.
func TestRemoveFilesEveryFileFirstFailurePerID(t *testing.T) {
	for _, n := range []int{2, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			mem := vfs.NewMem()
			if err := mem.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			bad := segid.ID(1)
			inj := failRemoves{segid.FileName(bad, "post"), segid.FileName(bad, "cmp")}
			m := NewManager(errorfs.Wrap(mem, inj), dir, nil, 1000, Options{})
			var ids []segid.ID
			for i := 0; i < n; i++ {
				id := segid.ID(i + 1)
				ids = append(ids, id)
				writeFiles(t, mem, id, "cmp", "del", "post", "legacy-partial")
			}
			keep := segid.ID(999)
			writeFiles(t, mem, keep, "cmp")
			errs := m.removeFiles(ids)
			names, err := mem.List(dir)
			if err != nil {
				t.Fatal(err)
			}
			// The first failure in listing order (MemFS lists in no
			// fixed order): either failing name.
			if errs[0] == nil || !strings.Contains(errs[0].Error(), inj[0]) && !strings.Contains(errs[0].Error(), inj[1]) {
				t.Fatalf("failing ID reported %v, want one of its failing files %v", errs[0], inj)
			}
			left := map[string]bool{}
			for _, name := range names {
				left[name] = true
			}
			for i, id := range ids {
				for _, s := range []string{"cmp", "del", "post", "legacy-partial"} {
					name := segid.FileName(id, s)
					if failing := id == bad && (s == "cmp" || s == "post"); left[name] != failing {
						t.Errorf("%s left %v, want %v", name, left[name], failing)
					}
				}
				if i > 0 && errs[i] != nil {
					t.Errorf("ID %s reported %v", id, errs[i])
				}
			}
			if !left[segid.FileName(keep, "cmp")] {
				t.Error("a file of an ID not asked for was removed")
			}
		})
	}
}

// TestRemoveFilesOffersEachFileToTheRecycler: with a recycler set, every
// file of a removed ID is offered to it first; the files it takes are
// left to it (here: renamed away), the others removed, and no name of the
// ID remains either way.
func TestRemoveFilesOffersEachFileToTheRecycler(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := NewManager(mem, dir, nil, 1000, Options{})
	id := segid.ID(5)
	writeFiles(t, mem, id, "cmp", "del")
	var offered []string
	m.SetRecycler(func(name string) bool {
		offered = append(offered, name)
		if !strings.HasSuffix(name, ".del") {
			return false
		}
		if err := mem.Rename(mem.PathJoin(dir, name), mem.PathJoin(dir, "taken")); err != nil {
			t.Error(err)
			return false
		}
		return true
	})
	if errs := m.removeFiles([]segid.ID{id}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if len(offered) != 2 {
		t.Fatalf("offered %v, want both files of the ID", offered)
	}
	names, err := mem.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "taken" {
		t.Fatalf("directory after removal: %v, want only the recycled file", names)
	}
}
