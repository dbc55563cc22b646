package metadata

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// fullSample is a generation of compound and older segments using every
// member: parts, IVF runs, a mask, BP and Seismic counters.
func fullSample() *Metadata {
	m := sample()
	m.NextID = 0x40
	m.UID = "5f0c3a9d2b7e41c8a6d3f0e19b2c7a44"
	m.Schema = schema.MustNew(
		schema.Field{Name: "id", Type: schema.Keyword, Primary: true},
		schema.Field{Name: "body", Type: schema.Text},
	)
	for i := range 3 {
		m.Segments = append(m.Segments, Segment{
			Info: segment.Info{ID: segid.ID(0x20 + 2*i), Documents: uint32(300 + i),
				Files: []segment.FileInfo{{Suffix: "cmp", Size: 717115}},
				Parts: []segment.FileInfo{{Suffix: "post", Size: 145617}, {Suffix: "terms", Size: 60626},
					{Suffix: "norms", Size: 965}, {Suffix: "store", Size: 264266}, {Suffix: "pk", Size: 10940},
					{Suffix: "num", Size: 55}, {Suffix: "fwd", Size: 37908}, {Suffix: "vec", Size: 56},
					{Suffix: "rowstats", Size: 74}, {Suffix: "bmp", Size: 196608}, {Suffix: segment.SuffixIVF, Size: 9999}},
				IVF: []segment.IVFInfo{{Field: "émb", Runs: 2, Vectors: 17, Models: []string{"00ff00ff00ff00ff", "0123456789abcdef"}, Fragmented: true}},
			},
			Deletes:             &Mask{ID: segid.ID(0x21 + 2*i), Deleted: 3, Size: 40},
			BPUnconvergedPasses: i,
			Seismic:             &SeismicDebt{PendingTerms: 4, PartialPasses: 1, Stalls: 2},
		})
	}
	return m
}

// TestDecodeFastTakesTheUsualText: what Save writes is read by the one-pass
// decoder, to the same generation as the reference decoder's.
func TestDecodeFastTakesTheUsualText(t *testing.T) {
	for _, m := range []*Metadata{sample(), fullSample(), {Version: FormatVersion, NextID: 1, Schema: sample().Schema}} {
		data := []byte(encode(t, m))
		fast, ok := decodeFast(data)
		if !ok {
			t.Fatalf("the fast decoder declined what Save writes: %s", data)
		}
		ref, err := decodeReference(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("fast and reference decoders differ:\n%+v\n%+v", fast, ref)
		}
	}
	// Indented, as a person may rewrite it.
	var b strings.Builder
	for _, c := range encode(t, fullSample()) {
		b.WriteRune(c)
		if c == ',' || c == '{' {
			b.WriteString("\n  ")
		}
	}
	if _, ok := decodeFast([]byte(b.String())); !ok {
		t.Fatalf("the fast decoder declined indented text: %s", b.String())
	}
}

// TestDecodeFastDeclinesWhatTheReferenceRefuses: every coercion the
// reference refuses is declined by the one-pass decoder, so Decode's
// error comes from the reference (TestDecodeRefusesCoercions checks the
// messages); so are texts it merely does not handle.
func TestDecodeFastDeclinesWhatTheReferenceRefuses(t *testing.T) {
	good := encode(t, fullSample())
	for _, c := range []struct{ from, to string }{
		{`"generation":7`, `"generation":null`},
		{`"generation":7`, `"generation":7,"generation":9`},
		{`"generation":7`, `"Generation":7`},
		{`"generation":7`, `"generation":7.5`},
		{`"generation":7`, `"generation":-7`},
		{`"generation":7`, `"generation":"7"`},
		{`"generation":7`, `"generation":18446744073709551616`},
		{`"generation":7`, `"generation":07`},
		{`"generation":7`, `"generation":7e0`},
		{`"nextId":"40"`, `"nextId":null`},
		{`"nextId":"40"`, `"nextId":"4G"`},
		{`"nextId":"40"`, `"nextId":64`},
		{`"version":1`, `"version":null`},
		{`"documents":5`, `"documents":null`},
		{`"documents":5`, `"documents":4294967296`},
		{`"documents":5`, `"documents":-1`},
		{`"size":10`, `"size":null`},
		{`"size":10`, `"size":-10`},
		{`"suffix":"post"`, `"suffix":null`},
		{`"suffix":"post"`, `"suffix":"p\u006fst"`},
		{`"deletes":{"id":"11"`, `"deletes":null,"x":{"id":"11"`},
		{`"deletes":{"id":"11","deleted":2,"size":8}`, `"deletes":null`},
		{`"seismic":{"pendingTerms":4`, `"seismic":{"pendingTerms":null`},
		{`"fragmented":true`, `"fragmented":null`},
		{`"fragmented":true`, `"fragmented":1`},
		{`"bpConverged":true`, `"bpConverged":"true"`},
		{`"models":["00ff00ff00ff00ff"`, `"models":[null`},
		{`"schema":{`, `"schema":null,"unknown":{`},
		{`"schema":{`, `"future":1,"schema":{`},
		{`"files":[`, `"files":{"a":[`},
		{`}]}`, `}]}x`},
		{`}]}`, `}]}{}`},
		{`"documents":5`, `"documents":5,"Documents":5`},
		{`"id":"10"`, `"id":"10","id":"10"`},
	} {
		in := strings.Replace(good, c.from, c.to, 1)
		if in == good {
			t.Fatalf("%q not in %s", c.from, good)
		}
		if _, ok := decodeFast([]byte(in)); ok {
			t.Errorf("the fast decoder accepted %s (%s)", c.to, in)
		}
	}
}

// TestDecodeFastKnowsEveryMember: the one-pass decoder's member lists are
// exactly the JSON members of the types it fills, so that a member added
// to Metadata, Segment, segment.Info, FileInfo, IVFInfo, Mask or
// SeismicDebt without teaching the decoder fails here (until then such
// texts would be declined and read by the slower reference decoder).
func TestDecodeFastKnowsEveryMember(t *testing.T) {
	for _, c := range []struct {
		t     reflect.Type
		names []string
	}{
		{reflect.TypeFor[Metadata](), metadataMembers.names()},
		{reflect.TypeFor[Segment](), segmentMembers.names()},
		{reflect.TypeFor[segment.FileInfo](), fileMembers.names()},
		{reflect.TypeFor[segment.IVFInfo](), ivfMembers.names()},
		{reflect.TypeFor[Mask](), maskMembers.names()},
		{reflect.TypeFor[SeismicDebt](), seismicMembers.names()},
	} {
		got := append([]string(nil), c.names...)
		want := jsonMembers(c.t)
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the fast decoder reads %v, the type has %v", c.t, got, want)
		}
	}
}

// jsonMembers lists the JSON member names of struct type t, embedded
// structs flattened, as encoding/json sees them.
func jsonMembers(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonMembers(f.Type)...)
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// FuzzDecodeFastMatches checks the one-pass decoder against the
// reference, side by side (make test runs it in its short fuzz pass):
// whatever it accepts, the reference accepts and decodes to the same
// generation, and what it declines is either refused by the reference or
// holds what it leaves to the reference (checkDeclineIsUnhandled). The
// seeds are the corpus of TestDecodeFastAgreesWithReferenceOnCorpus and
// texts it declines.
func FuzzDecodeFastMatches(f *testing.F) {
	known := knownMembers(f)
	for _, data := range corpus(f) {
		f.Add(data)
	}
	good := encode(f, fullSample())
	for _, r := range [][2]string{
		{`"generation":7`, `"generation":null`}, {`"size":10`, `"size":1e1`},
		{`"suffix":"post"`, `"suffix":"p\u006fst"`}, {`"ivf":[`, `"ivf":null,"x":[`},
		{`"models":[`, `"models":null,"y":[`}, {`"parts":[`, `"parts":[],"z":[`},
		{`"name":"id"`, `"name":"i\u0064"`}, {`,"segments":[`, ` , "segments" : [ `},
		{`"size":10`, `"size":10 `}, {`"fields":[`, `"fields":[ `},
	} {
		f.Add([]byte(strings.Replace(good, r[0], r[1], 1)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !checkFastAgrees(t, data) {
			checkDeclineIsUnhandled(t, data, known)
		}
	})
}

func dump(m *Metadata) string { return fmt.Sprintf("%+v", *m) }

// BenchmarkDecode decodes the metadata.json of an index of 80 and of
// 1,000 compound segments (the bench's open_ms and open_ms at 1000
// segments), with the one-pass decoder (Decode) and the reference.
func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{80, 1000} {
		m := fullSample()
		m.Segments = m.Segments[:0]
		for i := range n {
			s := fullSample().Segments[1]
			s.ID, s.Deletes, s.Seismic, s.IVF = segid.ID(i+1), nil, nil, nil
			m.Segments = append(m.Segments, s)
		}
		m.NextID = segid.ID(n + 1)
		data := []byte(encode(b, m))
		b.Run(fmt.Sprintf("segments=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("segments=%d/reference", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := decodeReference(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// statLies reports a size other than the file's.
type statLies struct {
	vfs.File
	size int64
}

type liedInfo struct {
	vfs.FileInfo
	size int64
}

func (l liedInfo) Size() int64 { return l.size }

func (s statLies) Stat() (vfs.FileInfo, error) {
	st, err := s.File.Stat()
	return liedInfo{st, s.size}, err
}

// TestReadAllWholeFile: Load's reader returns the whole file whether its
// size is what Stat says, larger (a file that grew) or smaller.
func TestReadAllWholeFile(t *testing.T) {
	fs := vfs.NewMem()
	for _, n := range []int{0, 1, 511, 4096, 100_000} {
		want := strings.Repeat("x", n)
		f, err := fs.Create("m", vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(want)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		for _, lie := range []int64{-1, 0, int64(n) / 2, int64(n) + 7} {
			f, err := fs.Open("m")
			if err != nil {
				t.Fatal(err)
			}
			var file vfs.File = f
			if lie >= 0 {
				file = statLies{f, lie}
			}
			got, err := readAll(file, MaxFileBytes)
			f.Close()
			if err != nil || string(got) != want {
				t.Fatalf("%d bytes, Stat says %d: read %d bytes, %v", n, lie, len(got), err)
			}
		}
	}
}
