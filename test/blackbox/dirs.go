package blackbox

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Metadata is what the tests read from DIR/<index>/metadata.json: the
// generation and, per live segment, its ID and the IDs it owns.
type Metadata struct {
	Generation uint64
	// Segments maps a live segment ID to the IDs it owns in the directory:
	// itself and its current deletion mask, if any.
	Segments map[SegID][]SegID
	// Documents maps a live segment ID to its row count, when metadata
	// names it ("documents").
	Documents map[SegID]int64
	// Raw is the file's bytes.
	Raw []byte
}

// LiveIDs returns every ID the metadata owns.
func (m *Metadata) LiveIDs() map[SegID]bool {
	out := make(map[SegID]bool)
	for _, ids := range m.Segments {
		for _, id := range ids {
			out[id] = true
		}
	}
	return out
}

// readMetadata parses DIR/<index>/metadata.json. The contract fixes
// {"generation":G,"segments":[{"id":ID,...}]} and says each segment names
// the ID of its current deletion mask; the mask's field is not fixed, so
// every "id"/"...Id" value nested in a segment entry (outside its file
// list) is taken as an ID it owns.
func readMetadata(t testing.TB, indexDir string) *Metadata {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(indexDir, "metadata.json"))
	if err != nil {
		t.Fatalf("read metadata: %v", err)
	}
	m, err := parseMetadata(raw)
	if err != nil {
		t.Fatalf("%s/metadata.json: %v", indexDir, err)
	}
	return m
}

func parseMetadata(raw []byte) (*Metadata, error) {
	var doc struct {
		Generation uint64                       `json:"generation"`
		Segments   []map[string]json.RawMessage `json:"segments"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	m := &Metadata{Generation: doc.Generation, Segments: map[SegID][]SegID{}, Documents: map[SegID]int64{}, Raw: raw}
	for i, seg := range doc.Segments {
		var id SegID
		rawID, ok := seg["id"]
		if !ok {
			return nil, fmt.Errorf("segment %d has no id", i)
		}
		if err := json.Unmarshal(rawID, &id); err != nil {
			return nil, fmt.Errorf("segment %d: %v", i, err)
		}
		if _, dup := m.Segments[id]; dup {
			return nil, fmt.Errorf("segment %s listed twice", id)
		}
		owned := []SegID{id}
		for k, v := range seg {
			if k == "id" || k == "files" {
				continue
			}
			owned = append(owned, nestedIDs(k, v)...)
		}
		m.Segments[id] = owned
		if d, ok := seg["documents"]; ok {
			var n int64
			if json.Unmarshal(d, &n) == nil {
				m.Documents[id] = n
			}
		}
	}
	return m, nil
}

// nestedIDs returns the IDs under key: the value itself if key names an
// ID, and any ID fields of nested objects.
func nestedIDs(key string, v json.RawMessage) []SegID {
	var out []SegID
	if key == "id" || strings.HasSuffix(key, "Id") || strings.HasSuffix(key, "ID") {
		var id SegID
		if json.Unmarshal(v, &id) == nil && id != "" {
			out = append(out, id)
		}
		return out
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) == nil {
		for k, vv := range obj {
			out = append(out, nestedIDs(k, vv)...)
		}
	}
	return out
}

// parseSegFile splits seg_<ID>.<suffix> as the contract defines it: ID in
// lowercase hex, a non-empty suffix. Anything else is not a segment file.
func parseSegFile(name string) (id SegID, suffix string, ok bool) {
	rest, found := strings.CutPrefix(name, "seg_")
	if !found {
		return "", "", false
	}
	hex, suffix, found := strings.Cut(rest, ".")
	if !found || suffix == "" || hex == "" || len(hex) > 16 {
		return "", "", false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", "", false
		}
	}
	return SegID(hex), suffix, true
}

// normID strips leading zeros so "0a" and "a" compare equal.
func normID(id SegID) SegID {
	s := strings.TrimLeft(string(id), "0")
	if s == "" {
		s = "0"
	}
	return SegID(s)
}

// segFiles lists the seg_ files of an index directory by ID.
func segFiles(t testing.TB, indexDir string) map[SegID][]string {
	t.Helper()
	ents, err := os.ReadDir(indexDir)
	if err != nil {
		t.Fatalf("list %s: %v", indexDir, err)
	}
	out := map[SegID][]string{}
	for _, e := range ents {
		if id, _, ok := parseSegFile(e.Name()); ok {
			out[normID(id)] = append(out[normID(id)], e.Name())
		}
	}
	return out
}

// unownedSegFiles returns every seg_<ID>.* file of the index directory
// whose ID metadata.json does not own (a live segment or its mask).
func unownedSegFiles(t testing.TB, indexDir string) (unowned []string, m *Metadata) {
	t.Helper()
	m = readMetadata(t, indexDir)
	live := map[SegID]bool{}
	for id := range m.LiveIDs() {
		live[normID(id)] = true
	}
	for id, names := range segFiles(t, indexDir) {
		if !live[id] {
			unowned = append(unowned, names...)
		}
	}
	sort.Strings(unowned)
	return unowned, m
}

// missingSegFiles returns the live segment IDs that have no file at all.
func missingSegFiles(t testing.TB, indexDir string, m *Metadata) []SegID {
	t.Helper()
	files := segFiles(t, indexDir)
	var out []SegID
	for id := range m.Segments {
		if len(files[normID(id)]) == 0 {
			out = append(out, id)
		}
	}
	return out
}

// fileEntry is one file of a directory snapshot.
type fileEntry struct {
	Size  int64
	Mode  fs.FileMode
	MTime time.Time
}

// snapshotDir records every file and directory under dir.
func snapshotDir(t testing.TB, dir string) map[string]fileEntry {
	t.Helper()
	out := map[string]fileEntry{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		e := fileEntry{Mode: info.Mode(), MTime: info.ModTime()}
		if !info.IsDir() {
			e.Size = info.Size()
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

// settledSnapshot is snapshotDir once the running server has stopped
// changing dir: its background work after a commit (refilling spare
// files, recycling the replaced metadata.json) ends on its own, and a
// test comparing the directory before and after a refused process must
// not count it. It waits until two snapshots 100 ms apart agree (at most
// 20 s).
func settledSnapshot(t testing.TB, dir string) map[string]fileEntry {
	t.Helper()
	prev := snapshotDir(t, dir)
	for deadline := time.Now().Add(20 * time.Second); ; {
		time.Sleep(100 * time.Millisecond)
		cur := snapshotDir(t, dir)
		if len(diffSnapshots(prev, cur)) == 0 {
			return cur
		}
		if time.Now().After(deadline) {
			t.Fatalf("the data directory %s is still changing after 20s:\n%v", dir, diffSnapshots(prev, cur))
		}
		prev = cur
	}
}

// diffSnapshots describes the differences between two snapshots.
func diffSnapshots(before, after map[string]fileEntry) []string {
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			out = append(out, "removed "+p)
		case a.Size != b.Size || a.Mode != b.Mode:
			out = append(out, fmt.Sprintf("changed %s: size %d->%d mode %v->%v", p, b.Size, a.Size, b.Mode, a.Mode))
		case !a.MTime.Equal(b.MTime) && !a.Mode.IsDir():
			out = append(out, fmt.Sprintf("modified %s (mtime %v -> %v)", p, b.MTime, a.MTime))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, "created "+p)
		}
	}
	sort.Strings(out)
	return out
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// idsString formats IDs sorted.
func idsString(ids []SegID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	sort.Strings(s)
	return "[" + strings.Join(s, " ") + "]"
}

// hexLess orders hex IDs numerically.
func hexLess(a, b SegID) bool {
	x, _ := strconv.ParseUint(string(a), 16, 64)
	y, _ := strconv.ParseUint(string(b), 16, 64)
	return x < y
}

// dirNames lists the names in dir with their sizes (for failure messages).
func dirNames(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range ents {
		if info, err := e.Info(); err == nil && !e.IsDir() {
			out = append(out, fmt.Sprintf("%s(%d)", e.Name(), info.Size()))
		} else {
			out = append(out, e.Name()+"/")
		}
	}
	return out
}
