package segment

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/engine/ivf/ivftest"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

const ivfDims = 128

func ivfSchema() *schema.Schema {
	return schema.MustNew(
		schema.Field{Name: "id", Type: schema.Keyword, Primary: true},
		schema.Field{Name: "body", Type: schema.Text},
		schema.Field{Name: "emb", Type: schema.DenseVector, Dims: ivfDims, Binary: true},
	)
}

// ivfDocs returns Opticks paragraphs as documents whose vector derives
// from their text; every 10th has no vector.
func ivfDocs(t testing.TB, s *schema.Schema, from, n int) []*schema.Document {
	ps := opticksParagraphs(t)
	var out []*schema.Document
	for i := from; i < from+n; i++ {
		p := ps[i%len(ps)]
		m := map[string]any{"id": fmt.Sprintf("d%05d", i), "body": p}
		if i%10 != 3 {
			m["emb"] = ivftest.TextVector(p, ivfDims)
		}
		raw, _ := json.Marshal(m)
		d, err := s.ParseDocument(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func writeIVFSegment(t testing.TB, fs vfs.FS, s *schema.Schema, id segid.ID, docs []*schema.Document, cfg *ivf.Config) Info {
	t.Helper()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(s)
	b.separate = true // tests damage the ivf or seis file alone
	if cfg != nil {
		b.SetIVFConfig(*cfg)
	}
	for _, d := range docs {
		b.Add(d)
	}
	info, err := b.Write(context.Background(), fs, "idx", id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func smallTrainCfg() *ivf.Config {
	c := ivf.DefaultConfig()
	c.TrainMin, c.PerCluster = 200, 32
	return &c
}

func TestIVFRoundTripAndConcat(t *testing.T) {
	s := ivfSchema()
	fs := vfs.NewMem()
	a := writeIVFSegment(t, fs, s, 1, ivfDocs(t, s, 0, 600), smallTrainCfg())
	b := writeIVFSegment(t, fs, s, 2, ivfDocs(t, s, 600, 100), nil) // flat: below TrainMin
	if len(a.IVF) != 1 || a.IVF[0].Runs != 1 || a.IVF[0].Fragmented || a.IVF[0].Vectors != 540 {
		t.Fatalf("fresh segment records %+v", a.IVF)
	}
	ra, err := Open(fs, "idx", s, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := Open(fs, "idx", s, b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	runsA, _ := ra.IVFRuns(2)
	runsB, _ := rb.IVFRuns(2)
	if runsA[0].Model.K < 2 || runsB[0].Model.K != 1 {
		t.Fatalf("K = %d and %d, want trained and flat", runsA[0].Model.K, runsB[0].Model.K)
	}
	for _, r := range []*Reader{ra, rb} {
		if err := r.Validate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Merge b then a: runs concatenated, doc ids rebased, not re-encoded.
	out := NewBuilder(s)
	out.ConcatIVFRuns([]IVFSource{
		{Reader: rb, Remap: func(d uint32) (uint32, bool) { return d, true }},
		{Reader: ra, Remap: func(d uint32) (uint32, bool) { return d + 100, true }},
	})
	for _, r := range []*Reader{rb, ra} {
		for d := uint32(0); d < r.NumDocs(); d++ {
			doc, err := r.Document(d)
			if err != nil {
				t.Fatal(err)
			}
			out.Add(doc)
		}
	}
	m, err := out.Write(context.Background(), fs, "idx", 3)
	if err != nil {
		t.Fatal(err)
	}
	if m.IVF[0].Runs != 2 || !m.IVF[0].Fragmented || m.IVF[0].Models[1] != a.IVF[0].Models[0] || m.IVF[0].Models[0] != b.IVF[0].Models[0] {
		t.Fatalf("merged segment records %+v; sources %+v %+v", m.IVF, a.IVF, b.IVF)
	}
	if err := Validate(context.Background(), fs, "idx", s, m); err != nil {
		t.Fatal(err)
	}
	// Metadata that disagrees with the file is corruption.
	bad := m
	bad.IVF = []IVFInfo{m.IVF[0]}
	bad.IVF[0].Fragmented = false
	_, err = Open(fs, "idx", s, bad)
	wantCorruption(t, err, "metadata fragmentation bit disagrees")
}

func TestIVFValidateDetectsFlippedRunByte(t *testing.T) {
	s := ivfSchema()
	fs := vfs.NewMem()
	info := writeIVFSegment(t, fs, s, 7, ivfDocs(t, s, 0, 400), smallTrainCfg())
	var size int64
	for _, fi := range info.Files {
		if fi.Suffix == SuffixIVF {
			size = fi.Size
		}
	}
	path := "idx/" + segid.FileName(7, SuffixIVF)
	orig := readFile(t, fs, path)
	for _, off := range flipOffsets(size) {
		if off < 0 || off >= size {
			continue
		}
		bad := append([]byte(nil), orig...)
		bad[off] ^= 0x10
		writeFile(t, fs, path, bad)
		wantCorruption(t, Validate(context.Background(), fs, "idx", s, info), fmt.Sprintf("ivf byte %d", off))
		// A flipped code with a recomputed CRC is still caught: it is
		// not the sign code of the stored vector (or not in its cluster).
		if fixed := fixFrame(bad); off > headerSize && off < size-footerSize-8 {
			writeFile(t, fs, path, fixed)
			wantCorruption(t, Validate(context.Background(), fs, "idx", s, info), fmt.Sprintf("ivf byte %d, CRC fixed", off))
		}
	}
	writeFile(t, fs, path, orig)
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatal(err)
	}
}

// FuzzOpenIVF feeds arbitrary ivf payloads to the decoder: it either
// refuses them with a *CorruptionError or yields runs that search,
// validate and check without panicking.
func FuzzOpenIVF(f *testing.F) {
	s := ivfSchema()
	fs := vfs.NewMem()
	info := writeIVFSegment(f, fs, s, 9, ivfDocs(f, s, 0, 40), &ivf.Config{TrainMin: 10, PerCluster: 8, MaxK: 8, Iterations: 3})
	seed := readFile(f, fs, "idx/"+segid.FileName(9, SuffixIVF))
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		f.Fatal(err)
	}
	dense := r.dense
	f.Add(seed, false)
	mid := append([]byte(nil), seed...)
	mid[len(mid)/2] ^= 0x5a
	f.Add(fixFrame(mid), true)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix {
			data = fixFrame(data)
		}
		payload, err := checkFrame(data, 9, SuffixIVF, fileKinds[SuffixIVF])
		if err != nil {
			mustBeCorruption(t, err)
			return
		}
		runs, err := openIVF(9, s, payload, 40, dense)
		if err != nil {
			mustBeCorruption(t, err)
			return
		}
		q := make([]uint64, ivf.Words(ivfDims))
		for _, fr := range runs {
			for _, run := range fr {
				_ = run.CheckFull(40)
				_, _ = run.Search(q, 3, 0, 40, nil, ivf.NewTopK(5))
				_ = run.Remap(func(d uint32) (uint32, bool) { return d, d < 40 })
			}
		}
	})
}
