package segment

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"strings"
	"testing"

	"github.com/summadev/summa/engine/segment/codec"
)

// TestEstimateDocIDCodecs estimates, on postings dumped before and after
// BP (engine/index TestMeasureBPLinuxDoc with SUMMA_BP_DUMP=path), what
// other doc-id codes would cost and how much of BP's gain each would show,
// per document frequency class. It is a measurement, not a check:
//
//	SUMMA_BP_MEASURE=1 SUMMA_BP_DOCS=0 SUMMA_BP_DUMP=/tmp/bp go test ./engine/index -run TestMeasureBPLinuxDoc
//	SUMMA_BP_DUMP=/tmp/bp go test ./engine/segment -run TestEstimateDocIDCodecs -v
//
// Columns (bytes of doc ids, all fields): "current" is the format
// (docsSectionParts), "blocks min" the same with every full block coded by
// the shorter of packed gaps and interpolation (no quarter threshold),
// "interp" one interpolative code of the whole list, "gamma" and "delta"
// the first doc at a fixed width then Elias gamma or delta gaps, "best"
// the shortest of the three per list (these four unpadded bits / 8), and
// "loggap" the sum of log2(gap) / 8 that BP minimises, "blocks min4" the
// current format with every full block coded by the shortest of packed
// gaps, interpolation, gamma gaps (a byte of header) and a bitmap over the
// block's range (four bytes of header): the per-block choice of a code
// that would let BP's dense runs show. The last line is
// the current format with each term in whichever order codes it shorter:
// a bound no single order reaches.
func TestEstimateDocIDCodecs(t *testing.T) {
	base := os.Getenv("SUMMA_BP_DUMP")
	if base == "" {
		t.Skip("set SUMMA_BP_DUMP to the path given to TestMeasureBPLinuxDoc")
	}
	names := []string{"current", "blocks min", "interp", "gamma", "delta", "best", "loggap", "blocks min4"}
	classes := []uint32{1, 2, 4, 16, 128, 1024}
	class := func(df int) int {
		c := 0
		for c+1 < len(classes) && uint32(df) >= classes[c+1] {
			c++
		}
		return c
	}
	var sums [2][][]float64 // [order][class][codec]
	var perTerm [2][]float64
	for k, suffix := range []string{".before", ".after"} {
		numDocs, terms := loadPostingsDump(t, base+suffix)
		sums[k] = make([][]float64, len(classes)+1)
		for c := range sums[k] {
			sums[k][c] = make([]float64, len(names))
		}
		var e codec.DocsEncoder
		for _, tm := range terms {
			costs := estimateDocIDCodecs(&e, numDocs, tm.docs, tm.freqs)
			perTerm[k] = append(perTerm[k], costs[0])
			for i, v := range costs {
				sums[k][class(len(tm.docs))][i] += v
				sums[k][len(classes)][i] += v
			}
		}
	}
	var b strings.Builder
	for c := range sums[0] {
		label := "total"
		if c < len(classes) {
			label = fmt.Sprintf("df >= %d", classes[c])
		}
		fmt.Fprintf(&b, "%-10s", label)
		for i, name := range names {
			x, y := sums[0][c][i], sums[1][c][i]
			fmt.Fprintf(&b, " | %s %.0f -> %.0f (%.1f%%)", name, x, y, 100*(1-y/max(x, 1)))
		}
		b.WriteString("\n")
	}
	var x, y float64
	for i := range perTerm[0] {
		x, y = x+perTerm[0][i], y+min(perTerm[0][i], perTerm[1][i])
	}
	fmt.Fprintf(&b, "current, each term in its shorter order: %.0f -> %.0f (%.1f%%)\n", x, y, 100*(1-y/x))
	t.Log("\n" + b.String())
}

// estimateDocIDCodecs returns the doc-id bytes of one list under the codes
// of TestEstimateDocIDCodecs, in its column order.
func estimateDocIDCodecs(e *codec.DocsEncoder, numDocs uint32, docs, freqs []uint32) []float64 {
	e.Reset(nil, numDocs, true)
	for i := range docs {
		e.Add(docs[i], freqs[i])
	}
	p, ok := docsSectionParts(e.Finish(), uint32(len(docs)), numDocs)
	if !ok {
		panic("estimate: section does not parse")
	}
	cur := float64(p.IDs())
	// Full blocks at the shorter of their two codes.
	blocks := float64(p.Skip + p.Tail)
	blocks4 := blocks
	last := int64(-1)
	var gaps [codec.BlockSize]uint32
	for k := 0; k+codec.BlockSize <= len(docs); k += codec.BlockSize {
		prev := last
		for i, d := range docs[k : k+codec.BlockSize] {
			gaps[i], prev = uint32(int64(d)-prev-1), int64(d)
		}
		packed := len(codec.AppendPFor(nil, gaps[:]))
		interp := len(codec.AppendInterpBlock(nil, docs[k:k+codec.BlockSize], last))
		blocks += float64(min(packed, interp))
		gammaBits := 0
		for _, g := range gaps {
			gammaBits += 2*bits.Len32(g+1) - 1
		}
		bitmap := 4 + (int(prev-last)+7)/8
		blocks4 += float64(min(packed, interp, 1+(gammaBits+7)/8, bitmap))
		last = prev
	}
	var w codec.BitWriter
	codec.AppendInterp(&w, docs, 0, numDocs-1)
	interp := float64(w.Len())
	first := float64(bits.Len32(numDocs - uint32(len(docs))))
	gamma, delta, logGap := first, first, math.Log2(float64(docs[0])+1)
	for i := 1; i < len(docs); i++ {
		g := docs[i] - docs[i-1]
		l := bits.Len32(g)
		gamma += float64(2*l - 1)
		delta += float64(l - 1 + 2*bits.Len(uint(l)) - 1)
		logGap += math.Log2(float64(g))
	}
	return []float64{cur, blocks, interp / 8, gamma / 8, delta / 8, min(interp, gamma, delta) / 8, logGap / 8, blocks4}
}

type dumpedTerm struct{ docs, freqs []uint32 }

// loadPostingsDump reads a file written by engine/index's dumpPostings.
func loadPostingsDump(t *testing.T, name string) (uint32, []dumpedTerm) {
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	next := func() uint64 {
		v, n := binary.Uvarint(b[off:])
		if n <= 0 {
			t.Fatalf("%s: bad varint at %d", name, off)
		}
		off += n
		return v
	}
	numDocs := uint32(next())
	var terms []dumpedTerm
	for off < len(b) {
		next() // field
		df := next()
		if df == 0 || df > uint64(numDocs) {
			t.Fatalf("%s: df %d at %d", name, df, off)
		}
		tm := dumpedTerm{docs: make([]uint32, df), freqs: make([]uint32, df)}
		for i := range tm.docs {
			tm.docs[i], tm.freqs[i] = uint32(next()), uint32(next())
		}
		terms = append(terms, tm)
	}
	return numDocs, terms
}
