package bench

import (
	"cmp"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// SizeEntry is one line of a merged index's byte breakdown: a section of
// our segment format ("post/text/positions") or a kind of a peer's files
// (Lucene's ".pos").
type SizeEntry struct {
	// Key names the section or the kind of file.
	Key string
	// Bytes is its size.
	Bytes int64
}

// sectionSizer is an engine that can break its open index's bytes down by
// section of its format (ours).
type sectionSizer interface {
	SectionSizes() ([]SizeEntry, error)
}

// otherFiles names the bytes of an index directory that no segment
// section accounts for (metadata, deletion masks, lock files).
const otherFiles = "other files (metadata, masks)"

// SectionSizes implements sectionSizer: the sections of every segment of
// the current snapshot (segment.Reader.SectionSizes), summed by part,
// field and section.
func (o *Ours) SectionSizes() ([]SizeEntry, error) {
	snap, err := o.idx.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("section sizes: %w", err)
	}
	defer snap.Close()
	sum := map[string]int64{}
	for _, s := range snap.Segments {
		secs, err := s.Reader.SectionSizes()
		if err != nil {
			return nil, fmt.Errorf("section sizes: %w", err)
		}
		for _, x := range secs {
			key := x.Part + "/"
			if x.Field != "" {
				key += x.Field + "/"
			}
			sum[key+x.Section] += x.Bytes
		}
	}
	return sortedSizes(sum), nil
}

// addOtherFiles appends, when the sections add up to less than the
// directory's total, the difference as otherFiles.
func addOtherFiles(secs []SizeEntry, total int64) []SizeEntry {
	var sum int64
	for _, s := range secs {
		sum += s.Bytes
	}
	if total > sum {
		secs = append(secs, SizeEntry{Key: otherFiles, Bytes: total - sum})
	}
	return secs
}

// FileKindSizes sums the sizes of the regular files under dir by kind of
// file (fileKind), largest first: Lucene's by extension (".doc", ".pos",
// ".tim", ...), Xapian's by table, Bleve's by extension.
func FileKindSizes(dir string) ([]SizeEntry, error) {
	sum := map[string]int64{}
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum[fileKind(d.Name())] += info.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("file sizes of %s: %w", dir, err)
	}
	return sortedSizes(sum), nil
}

// fileKind names a peer's file by what it holds: the extension of a
// segment file (Lucene's "_0.pos", "_0_Lucene84_0.doc"; Bleve's
// "0000000a.zap"), otherwise the name with its digits replaced by N
// (Lucene's "segments_3", Xapian's "postlist.glass").
func fileKind(name string) string {
	if ext := filepath.Ext(name); ext != "" && (strings.HasPrefix(name, "_") || name[0] >= '0' && name[0] <= '9') {
		return ext
	}
	return digitRuns.ReplaceAllString(name, "N")
}

// digitRuns matches the numbers in a file name.
var digitRuns = regexp.MustCompile(`[0-9]+`)

// sortedSizes returns the map's entries, largest first (ties by key).
func sortedSizes(m map[string]int64) []SizeEntry {
	out := make([]SizeEntry, 0, len(m))
	for k, v := range m {
		out = append(out, SizeEntry{Key: k, Bytes: v})
	}
	slices.SortFunc(out, func(a, b SizeEntry) int {
		if c := cmp.Compare(b.Bytes, a.Bytes); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// sizeLines renders each engine's breakdown of the merged index of the
// first repetition that has one: one line per section, its bytes and its
// share of the engine's total.
func (res *Result) sizeLines() string {
	var b strings.Builder
	for _, e := range res.Config.Engines {
		for _, rep := range res.Reps {
			r := rep.Engines[e]
			if r == nil || len(r.MergedSections) == 0 {
				continue
			}
			fmt.Fprintf(&b, "index bytes by section (merged) %s: %d\n", e, r.MergedBytes)
			for _, s := range r.MergedSections {
				fmt.Fprintf(&b, "  %-8s %-44s %10d %5.1f%%\n", e, s.Key, s.Bytes, 100*float64(s.Bytes)/float64(max(1, r.MergedBytes)))
			}
			break
		}
	}
	return b.String()
}
