package segment

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/summadev/summa/engine/segid"
)

// TestChunkedValidateAgreesWithSequential damages the files validateTerms
// reads (bytes flipped, checksums recomputed, so that only the structural
// checks can tell) and checks that validating with every field cut into as
// many term ranges as allowed, checked concurrently, detects exactly the
// damage one walk of the terms detects (the first failure met may differ:
// a range's seek can meet it first). The ranges count in private slots,
// then (a field too large for them) atomically in the shared counts.
func TestChunkedValidateAgreesWithSequential(t *testing.T) {
	t.Run("slots", checkChunkedValidateAgreesWithSequential)
	defer func(m uint64) { privateCountsMax = m }(privateCountsMax)
	privateCountsMax = 0
	t.Run("atomic", checkChunkedValidateAgreesWithSequential)
}

func checkChunkedValidateAgreesWithSequential(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer func(b int) { chunkBytes = b }(chunkBytes)
	fs, s, info := smallSegment(t, 300)
	validate := func(chunk int) error {
		chunkBytes = chunk
		r, err := Open(fs, "idx", s, info)
		if err != nil {
			return err
		}
		defer r.Close()
		err = r.Validate(context.Background())
		return err
	}
	if err := validate(1); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(splitDicts([]*dict{r.dicts[fieldOrd(s, "body")]}, 64)); n < 8 {
		t.Fatalf("body cut in %d ranges only", n+1)
	}
	r.Close()
	detected := 0
	for _, suffix := range []string{SuffixTerms, SuffixPostings, SuffixNorms, SuffixRowStats, SuffixForward, SuffixBlockMax, SuffixPrimaryKey} {
		path := "idx/" + segid.FileName(corruptID, suffix)
		orig := readFile(t, fs, path)
		size := int64(len(orig))
		for k := int64(1); k < 32; k++ {
			off := headerSize + (size-frameSize)*k/32
			for _, mask := range []byte{0x01, 0xff} {
				bad := append([]byte(nil), orig...)
				bad[off] ^= mask
				writeFile(t, fs, path, fixFrame(bad))
				seq, chunked := validate(1<<40), validate(1)
				if (seq == nil) != (chunked == nil) {
					t.Errorf("%s byte %d ^ %#x: one walk says %v, ranges say %v", suffix, off, mask, seq, chunked)
				}
				if seq != nil {
					wantCorruption(t, chunked, fmt.Sprintf("%s byte %d ^ %#x", suffix, off, mask))
					detected++
				}
			}
		}
		writeFile(t, fs, path, orig)
	}
	if detected == 0 {
		t.Fatal("no damage detected at all")
	}
	t.Logf("%d damaged files detected", detected)
}
