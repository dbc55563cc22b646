package index

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// checks records the early checks of an incoming generation: a segment
// whose new files are all downloaded is validated in full at once, on the
// goroutine that downloaded its last file, while the other files still
// download; Publish then skips it. Guarded by Incoming.mu.
type checks struct {
	// arrived are the files written, closed and handed to Check since
	// their Create.
	arrived map[string]bool
	// running marks the segments (by position in the generation) whose
	// check started.
	running map[int]bool
	// passed holds the segments whose check passed, with the new mask's
	// bitmap (nil when the mask is not new).
	passed map[int]*roaring.Bitmap
	// of maps each new file to the segments it belongs to (built on
	// first use).
	of map[string][]int
	// readers are the new segments Check opened once they passed, before
	// their pages were dropped (Publish would otherwise read each one's
	// directories back from the disk, one after the other); Publish takes
	// them, forget and Abandon close them.
	readers map[int]*segment.Reader
}

// newChecks returns empty checks.
func newChecks() checks {
	return checks{arrived: make(map[string]bool), running: make(map[int]bool), passed: make(map[int]*roaring.Bitmap),
		readers: make(map[int]*segment.Reader)}
}

// Check tells that file name, created by Create, is written and closed,
// and validates in full (F03) every segment of the generation whose new
// files have now all arrived: its segment files with every checksum, its
// new deletion mask against its row count. It returns the first failure;
// the caller abandons the copy then. Check may run on several goroutines
// at once, each validating the segments its file completed; Publish
// validates whatever was not checked here.
func (in *Incoming) Check(ctx context.Context, name string) error {
	in.mu.Lock()
	if _, ok := in.files[name]; !ok {
		in.mu.Unlock()
		return fmt.Errorf("index: %s is not a file of incoming generation %d", name, in.next.Generation)
	}
	in.arrived[name] = true
	var todo []int
	for _, i := range in.segmentsOf(name) {
		if s := in.next.Segments[i]; !in.running[i] && in.complete(s) {
			in.running[i] = true
			todo = append(todo, i)
		}
	}
	in.mu.Unlock()
	for _, i := range todo {
		s := in.next.Segments[i]
		bm, err := in.validate(ctx, s)
		if err != nil {
			return fmt.Errorf("index: incoming generation %d, segment %s: %w", in.next.Generation, s.ID, err)
		}
		if in.dropBehind {
			in.dropPagesOf(in.newFiles(s))
		}
		// Opened here, on this goroutine, while other files download:
		// Publish would open the segments one after the other, and after
		// a large copy read each back from the disk.
		var r *segment.Reader
		if in.newSegs[s.ID] {
			opts := in.idx.readerOptions()
			opts.DroppedPages = in.dropBehind
			if r, err = segment.Open(in.idx.fs, in.idx.dir, in.idx.schema, s.Info, opts); err != nil {
				return fmt.Errorf("index: incoming generation %d: open segment %s: %w", in.next.Generation, s.ID, err)
			}
		}
		in.mu.Lock()
		if in.running[i] { // not forgotten meanwhile by a new Create
			in.passed[i] = bm
			if r != nil {
				in.readers[i], r = r, nil
			}
		}
		in.mu.Unlock()
		if r != nil {
			_ = r.Close()
		}
	}
	return nil
}

// checked returns the bitmap of segment i's new mask and true when Check
// validated segment i.
func (in *Incoming) checked(i int) (*roaring.Bitmap, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	bm, ok := in.passed[i]
	return bm, ok
}

// forget drops what Check knows of file name and of the segments it
// belongs to (the file is created again).
func (in *Incoming) forget(name string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.arrived, name)
	for _, i := range in.segmentsOf(name) {
		delete(in.running, i)
		delete(in.passed, i)
		in.closeReader(i)
	}
}

// closeReader closes and forgets the reader Check opened for segment i,
// if any. Guarded by Incoming.mu.
func (in *Incoming) closeReader(i int) {
	if r := in.readers[i]; r != nil {
		_ = r.Close()
		delete(in.readers, i)
	}
}

// takeReader returns the reader Check opened for segment i (nil when it
// did not), which the caller now owns.
func (in *Incoming) takeReader(i int) *segment.Reader {
	in.mu.Lock()
	defer in.mu.Unlock()
	r := in.readers[i]
	delete(in.readers, i)
	return r
}

// segmentsOf returns the positions of the segments name is a new file of.
func (in *Incoming) segmentsOf(name string) []int {
	if in.of == nil {
		in.of = make(map[string][]int)
		for i, s := range in.next.Segments {
			for _, n := range in.newFiles(s) {
				in.of[n] = append(in.of[n], i)
			}
		}
	}
	return in.of[name]
}

// newFiles returns the names of the files of s that the copy downloads.
func (in *Incoming) newFiles(s metadata.Segment) []string {
	var out []string
	if in.newSegs[s.ID] {
		for _, f := range s.Files {
			out = append(out, segid.FileName(s.ID, f.Suffix))
		}
	}
	if s.Deletes != nil && in.newMasks[s.Deletes.ID] {
		out = append(out, segid.FileName(s.Deletes.ID, segment.MaskSuffix))
	}
	return out
}

// complete tells whether every new file of s arrived.
func (in *Incoming) complete(s metadata.Segment) bool {
	for _, n := range in.newFiles(s) {
		if !in.arrived[n] {
			return false
		}
	}
	return true
}
