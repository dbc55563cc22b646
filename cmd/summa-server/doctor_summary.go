package main

import (
	"encoding/json"

	"github.com/summadev/summa/client"
)

// The doctor's summary (client.DoctorSummary) is its report in a form that
// always fits a Kubernetes termination message (4096 bytes): counts are
// exact, the lists of removed segments are cut (first summaryMaxSegments
// of each index, and shorter if the whole would not fit), the per-segment
// reasons are left out. The whole report is kept in the data directory
// (--report-id).

// maxSummaryBytes bounds the summary, newline included, below the
// kubelet's 4096-byte cut of a termination message.
const maxSummaryBytes = 4000

// summaryMaxSegments bounds each index's list of removed segments in the
// summary (the operator's status keeps as many).
const summaryMaxSegments = 100

// maxSummaryError bounds an error message in a summary that would not fit
// otherwise.
const maxSummaryError = 200

// summarize returns the summary of out, newline-terminated, at most
// maxSummaryBytes long. reportID is named only when the report was kept.
func summarize(out client.DoctorReport, reportID string, kept bool) []byte {
	s := client.DoctorSummary{Summary: true, Indexes: []client.DoctorIndexSummary{}, Error: out.Error}
	if kept {
		s.ReportID = reportID
	}
	for _, ir := range out.Indexes {
		ids := ir.RemovedSegments
		if ids == nil {
			ids = []string{}
		}
		s.Indexes = append(s.Indexes, client.DoctorIndexSummary{
			Name: ir.Name, CheckedSegments: ir.CheckedSegments, RemovedSegmentCount: len(ir.RemovedSegments),
			RemovedSegments: ids[:min(len(ids), summaryMaxSegments)], RemovedDocuments: ir.RemovedDocuments, Error: ir.Error,
		})
	}
	for {
		data, err := json.Marshal(s)
		if err == nil && len(data)+1 <= maxSummaryBytes {
			return append(data, '\n')
		}
		if !shrinkSummary(&s) {
			// Cannot happen with valid names (at most 253 bytes each):
			// the last resort is counts without indexes.
			return []byte(`{"summary":true,"indexes":[],"error":"the doctor's summary does not fit"}` + "\n")
		}
	}
}

// shrinkSummary makes s smaller by one step: halve the longest list of
// removed segments, else clip the errors, else leave out the last index.
// It reports false when nothing is left to shrink.
func shrinkSummary(s *client.DoctorSummary) bool {
	longest := -1
	for i, ix := range s.Indexes {
		if len(ix.RemovedSegments) > 0 && (longest < 0 || len(ix.RemovedSegments) > len(s.Indexes[longest].RemovedSegments)) {
			longest = i
		}
	}
	if longest >= 0 {
		ids := s.Indexes[longest].RemovedSegments
		s.Indexes[longest].RemovedSegments = ids[:len(ids)/2]
		return true
	}
	clipped := false
	if len(s.Error) > maxSummaryError {
		s.Error, clipped = s.Error[:maxSummaryError-3]+"...", true
	}
	for i := range s.Indexes {
		if e := s.Indexes[i].Error; len(e) > maxSummaryError {
			s.Indexes[i].Error, clipped = e[:maxSummaryError-3]+"...", true
		}
	}
	if clipped {
		return true
	}
	if len(s.Indexes) == 0 {
		return false
	}
	s.Indexes = s.Indexes[:len(s.Indexes)-1]
	s.IndexesOmitted++
	return true
}
