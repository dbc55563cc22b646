package metadata

import "github.com/summadev/summa/engine/segment"

// IVFFragmented reports the persisted binary-IVF debt of a segment: some
// binary dense field holds more than one encoded run (a merge
// concatenated them) and standalone maintenance should coalesce them (M08,
// M10). It reads the metadata entry only.
func (s *Segment) IVFFragmented() bool {
	for _, f := range s.IVF {
		if f.Fragmented {
			return true
		}
	}
	return false
}

// cloneIVF deep-copies a segment's IVF records.
func cloneIVF(in []segment.IVFInfo) []segment.IVFInfo {
	if in == nil {
		return nil
	}
	out := make([]segment.IVFInfo, len(in))
	for i, f := range in {
		f.Models = append([]string(nil), f.Models...)
		out[i] = f
	}
	return out
}
