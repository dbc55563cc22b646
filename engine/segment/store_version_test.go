package segment

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// keptDocument returns what Reader.Document gives back of d from a
// segment of the current store format: d without the strings and sparse
// vectors of the fields that are not stored (the store no longer keeps
// them).
func keptDocument(s *schema.Schema, d *schema.Document) *schema.Document {
	out := *d
	out.Fields = append([]schema.Values(nil), d.Fields...)
	for i := range s.Fields {
		f := &s.Fields[i]
		if f.IsStored() || i >= len(out.Fields) {
			continue
		}
		switch f.Type {
		case schema.Text, schema.Keyword:
			out.Fields[i].Strings = nil
		case schema.SparseVector:
			out.Fields[i].Sparse = nil
		}
	}
	return &out
}

// withUnstored returns d, a document rebuilt by Reader.Document, with the
// values of its fields that are not stored taken from the input document
// of the same primary key (inputs): the whole document a re-index adds.
func withUnstored(s *schema.Schema, d *schema.Document, inputs map[string]*schema.Document) (*schema.Document, bool) {
	in, ok := inputs[d.PrimaryKey]
	if !ok {
		return nil, false
	}
	out := *d
	out.Fields = append([]schema.Values(nil), d.Fields...)
	for i := range s.Fields {
		if !s.Fields[i].IsStored() && i < len(in.Fields) {
			out.Fields[i].Strings = in.Fields[i].Strings
			out.Fields[i].Sparse = in.Fields[i].Sparse
		}
	}
	return &out, true
}

// byPrimaryKey indexes docs by primary key.
func byPrimaryKey(docs []*schema.Document) map[string]*schema.Document {
	m := make(map[string]*schema.Document, len(docs))
	for _, d := range docs {
		m[d.PrimaryKey] = d
	}
	return m
}

// buildLegacySegment writes docs as segment id into fs/dir with a store
// of format version 1, which keeps the values of the fields that are not
// stored, as segments written before version 2 have.
func buildLegacySegment(t testing.TB, fs vfs.FS, dir string, s *schema.Schema, id segid.ID, docs []*schema.Document) Info {
	t.Helper()
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(s)
	b.separate = true
	b.store.kinds = recordKinds(s, legacyStoreVersion)
	for _, d := range docs {
		b.Add(d)
	}
	info, err := b.Write(context.Background(), fs, dir, id)
	if err != nil {
		t.Fatal(err)
	}
	setStoreVersion(t, fs, dir, id, legacyStoreVersion)
	return info
}

// setStoreVersion rewrites the format version in the header of segment
// id's store file (and the frame's checksum).
func setStoreVersion(t testing.TB, fs vfs.FS, dir string, id segid.ID, version uint32) {
	t.Helper()
	path := dir + "/" + segid.FileName(id, SuffixStore)
	data := readFile(t, fs, path)
	binary.LittleEndian.PutUint32(data[12:16], version)
	writeFile(t, fs, path, fixFrame(data))
}

// storeRaw returns the decompressed blocks of r's store, one after the
// other.
func storeRaw(t *testing.T, r *Reader) []byte {
	t.Helper()
	var out []byte
	for b := uint32(0); b < r.store.numBlocks; b++ {
		buf, _, _, err := r.store.decodeBlock(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *buf...)
		rawPool.Put(buf)
	}
	return out
}

// TestStoreKeepsOnlyStoredFields: a new segment's store is format version
// 2 and its records hold no value of the fields that are not stored (the
// text field note, the sparse vector sp), while a version 1 store of the
// same documents holds them; both serve the same stored JSON, validate,
// and Document gives back every kept value.
func TestStoreKeepsOnlyStoredFields(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 200)
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "new", s, 1, docs)
	old := buildLegacySegment(t, fs, "old", s, 1, docs)
	rNew, err := Open(fs, "new", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer rNew.Close()
	rOld, err := Open(fs, "old", s, old)
	if err != nil {
		t.Fatal(err)
	}
	defer rOld.Close()
	if v := fileVersion(rNew.file(SuffixStore).data); v != 2 {
		t.Fatalf("new store file version %d, want 2", v)
	}
	if v := fileVersion(rOld.file(SuffixStore).data); v != legacyStoreVersion {
		t.Fatalf("legacy store file version %d", v)
	}
	for _, name := range []string{"note", "sp"} {
		f := fieldOrd(s, name)
		if rNew.store.kinds[f] != recNone || rOld.store.kinds[f] == recNone {
			t.Errorf("%s: record kind %d in version 2, %d in version 1", name, rNew.store.kinds[f], rOld.store.kinds[f])
		}
	}
	if raw := storeRaw(t, rNew); bytes.Contains(raw, []byte("note 2:")) {
		t.Error("the version 2 store holds the unstored note values")
	}
	if raw := storeRaw(t, rOld); !bytes.Contains(raw, []byte("note 2:")) {
		t.Error("the version 1 store does not hold the note values (the test's premise)")
	}
	for _, fi := range []struct {
		dir  string
		info Info
	}{{"new", info}, {"old", old}} {
		if err := Validate(context.Background(), fs, fi.dir, s, fi.info); err != nil {
			t.Fatalf("%s: %v", fi.dir, err)
		}
	}
	if a, b := info.Files[3], old.Files[3]; a.Suffix != SuffixStore || a.Size >= b.Size {
		t.Errorf("store of %d bytes in version 2, %d in version 1", a.Size, b.Size)
	}
	for i, d := range docs {
		doc := uint32(i)
		gotNew, err := rNew.Document(doc)
		if err != nil {
			t.Fatal(err)
		}
		gotOld, err := rOld.Document(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !sameDocument(gotNew, keptDocument(s, d)) || !sameDocument(gotOld, d) {
			t.Fatalf("doc %d: Document %+v (version 2), %+v (version 1), input %+v", i, gotNew, gotOld, d)
		}
		a, err1 := rNew.StoredDocument(doc)
		b, err2 := rOld.StoredDocument(doc)
		if err1 != nil || err2 != nil || !bytes.Equal(a, d.Stored) || !bytes.Equal(b, d.Stored) {
			t.Fatalf("doc %d: StoredDocument %s, %v (version 2), %s, %v (version 1)", i, a, err1, b, err2)
		}
	}
	for f := range s.Fields {
		if rNew.dicts[f] != nil && !reflect.DeepEqual(dumpField(t, rNew, f), dumpField(t, rOld, f)) {
			t.Fatalf("field %d: postings differ between the store versions", f)
		}
	}
}

// TestMergeRewritesVersion1Store merges version 1 sources (whole blocks,
// blocks with deleted rows, rows out of order) and checks the output's
// store is version 2 and byte for byte the store a fresh build of the
// same documents in the same order writes.
func TestMergeRewritesVersion1Store(t *testing.T) {
	s := testSchema()
	fs := vfs.NewMem()
	docs := opticksDocs(t, s, 0)
	cuts := []int{0, len(docs) / 5, len(docs) / 2, len(docs)}
	var srcs []*Reader
	var srcDocs [][]*schema.Document
	for i := 0; i+1 < len(cuts); i++ {
		part := docs[cuts[i]:cuts[i+1]]
		info := buildLegacySegment(t, fs, "idx", s, segid.ID(200+i), part)
		r, err := Open(fs, "idx", s, info)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		srcs, srcDocs = append(srcs, r), append(srcDocs, part)
	}
	perm := Concat(srcs, func(src int, doc uint32) bool { return doc%5 != 2 })
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	plans := map[string][]DocRef{
		"in-order":     Concat(srcs, nil),
		"deletes":      Concat(srcs, func(src int, doc uint32) bool { return src != 1 || doc%4 != 1 }),
		"out-of-order": perm,
	}
	next := segid.ID(300)
	for name, order := range plans {
		merged, err := Merge(context.Background(), fs, "idx", next, s, srcs, order)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var inOrder []*schema.Document
		for _, ref := range order {
			inOrder = append(inOrder, srcDocs[ref.Source][ref.Doc])
		}
		fresh := buildSegment(t, fs, "fresh", s, next, inOrder)
		next++
		a := partBytes(t, fs, "idx", merged, SuffixStore)
		b := partBytes(t, fs, "fresh", fresh, SuffixStore)
		if fileVersion(a) != 2 || !bytes.Equal(a[headerSize:len(a)-footerSize], b[headerSize:len(b)-footerSize]) {
			t.Errorf("%s: merged store (version %d, %d bytes) differs from a fresh build's (%d bytes)", name, fileVersion(a), len(a), len(b))
		}
		if err := Validate(context.Background(), fs, "idx", s, merged); err != nil {
			t.Fatalf("%s: merged segment: %v", name, err)
		}
	}
}

// TestStoreVersionMustMatchLayout: a store whose header version does not
// match its record layout (a version 2 file claiming version 1, a version
// 1 file claiming version 2, a version 2 directory listing a kept value
// for an unstored field) is refused as corrupt.
func TestStoreVersionMustMatchLayout(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 40)
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "new", s, 1, docs)
	old := buildLegacySegment(t, fs, "old", s, 1, docs)
	setStoreVersion(t, fs, "new", 1, legacyStoreVersion)
	if _, err := Open(fs, "new", s, info); err == nil {
		t.Error("a version 2 store claiming version 1 opened")
	} else {
		wantCorruption(t, err, "version 2 store claiming version 1")
	}
	setStoreVersion(t, fs, "old", 1, 2)
	if _, err := Open(fs, "old", s, old); err == nil {
		t.Error("a version 1 store claiming version 2 opened")
	} else {
		wantCorruption(t, err, "version 1 store claiming version 2")
	}
	setStoreVersion(t, fs, "new", 1, 2)
	path := "new/" + segid.FileName(1, SuffixStore)
	data := readFile(t, fs, path)
	kinds := recordKinds(s, 2)
	at := bytes.LastIndex(data[:len(data)-footerSize], kinds)
	if at < 0 {
		t.Fatal("record kinds not found in the store's directory")
	}
	data[at+fieldOrd(s, "note")] = recStrings
	writeFile(t, fs, path, fixFrame(data))
	_, err := Open(fs, "new", s, info)
	wantCorruption(t, err, "version 2 store keeping an unstored field")
}

// TestValidateDetectsRecordsOfTheOtherVersion relabels a store as the
// other format version, header and record layout both (so that it opens):
// version 1 records read as version 2 have values left over, version 2
// records read as version 1 lack the values of the unstored fields, and
// the validation reports both as corrupt.
func TestValidateDetectsRecordsOfTheOtherVersion(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 60)
	for _, tc := range []struct {
		name     string
		build    func(testing.TB, vfs.FS, string, *schema.Schema, segid.ID, []*schema.Document) Info
		from, to uint32
	}{
		{"version 1 as 2", buildLegacySegment, legacyStoreVersion, 2},
		{"version 2 as 1", buildSegment, 2, legacyStoreVersion},
	} {
		fs := vfs.NewMem()
		info := tc.build(t, fs, "idx", s, 1, docs)
		if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
			t.Fatalf("%s: before: %v", tc.name, err)
		}
		path := "idx/" + segid.FileName(1, SuffixStore)
		data := readFile(t, fs, path)
		at := bytes.LastIndex(data[:len(data)-footerSize], recordKinds(s, tc.from))
		if at < 0 {
			t.Fatalf("%s: record kinds not found in the store's directory", tc.name)
		}
		copy(data[at:], recordKinds(s, tc.to))
		binary.LittleEndian.PutUint32(data[12:16], tc.to)
		writeFile(t, fs, path, fixFrame(data))
		r, err := Open(fs, "idx", s, info)
		if err != nil {
			t.Fatalf("%s: the relabelled store does not open: %v", tc.name, err)
		}
		err = r.Validate(context.Background())
		if cerr := r.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		wantCorruption(t, err, tc.name)
	}
}
