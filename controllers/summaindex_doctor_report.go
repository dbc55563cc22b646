package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// The doctor's report reaches status in two ways. The doctor Job's
// termination message holds its summary (exact counts, the first removed
// segments; it always fits the kubelet's 4 KiB), recorded when the Job
// ends, so that a run on a suspended index is recorded without starting
// the engine. The whole report is kept on the volume under the requestId
// and served by the engine (GET /v1/admin/doctor-reports/{id},
// status.doctor.reportPath); when the summary listed fewer segments than
// status keeps, the operator reads it once the engine is back. Status
// stays bounded: the counts are exact, removedSegments lists at most
// MaxRemovedSegments.

// applyDoctorReport records index's entry of a doctor report (whole, or its
// summary) in status.
func applyDoctorReport(index *summav1.SummaIndex, msg string) error {
	// A whole report decodes as a summary without counts: its lists are
	// complete.
	var rep engineclient.DoctorSummary
	if err := json.Unmarshal([]byte(msg), &rep); err != nil {
		return fmt.Errorf("the doctor's report is not JSON (%v): %.200s", err, msg)
	}
	d := index.Status.Doctor
	d.RemovedSegments, d.RemovedSegmentCount, d.RemovedDocuments, d.CheckedSegments = nil, 0, 0, 0
	d.ReportPath = ""
	if rep.ReportID != "" {
		d.ReportPath = "/v1/admin/doctor-reports/" + rep.ReportID
	}
	for _, ix := range rep.Indexes {
		if ix.Name == index.Name {
			d.CheckedSegments = ix.CheckedSegments
			d.RemovedDocuments = ix.RemovedDocuments
			d.RemovedSegmentCount = int64(max(len(ix.RemovedSegments), ix.RemovedSegmentCount))
			d.RemovedSegments = capSegments(ix.RemovedSegments)
		}
	}
	d.Message = reportMessage(d)
	return nil
}

// capSegments returns the first MaxRemovedSegments of ids.
func capSegments(ids []string) []string {
	if len(ids) > summav1.MaxRemovedSegments {
		return append([]string(nil), ids[:summav1.MaxRemovedSegments]...)
	}
	return ids
}

// reportMessage is the one-line result of a run.
func reportMessage(d *summav1.DoctorStatus) string {
	msg := fmt.Sprintf("checked %d segment(s), removed %d, %d document(s) lost",
		d.CheckedSegments, d.RemovedSegmentCount, d.RemovedDocuments)
	if n := int64(len(d.RemovedSegments)); n < d.RemovedSegmentCount {
		msg += fmt.Sprintf(" (the first %d listed", n)
		if d.ReportPath != "" {
			msg += "; all in the engine's report " + d.ReportPath
		}
		msg += ")"
	}
	return msg
}

// reportIncomplete reports whether status lists fewer removed segments
// than it could: the summary was cut further than status is.
func reportIncomplete(d *summav1.DoctorStatus) bool {
	n := int64(len(d.RemovedSegments))
	return n < d.RemovedSegmentCount && n < summav1.MaxRemovedSegments
}

// completeReport fills status's list of removed segments from the whole
// report the engine of pod keeps, when the summary was cut. It never holds
// the run: an engine without the report (an older image) or that does not
// answer leaves the summary's list, and the message says so.
func (r *SummaIndexReconciler) completeReport(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) {
	d := index.Status.Doctor
	if !reportIncomplete(d) || d.ReportPath == "" {
		return
	}
	rep, err := r.fetchDoctorReport(ctx, index, pod, d.RequestID)
	if err != nil {
		log.FromContext(ctx).Info("The engine's doctor report could not be read; keeping the summary", "error", err.Error())
		return
	}
	for _, ix := range rep.Indexes {
		if ix.Name == index.Name {
			d.RemovedSegments = capSegments(ix.RemovedSegments)
			d.RemovedSegmentCount = int64(len(ix.RemovedSegments))
			d.RemovedDocuments, d.CheckedSegments = ix.RemovedDocuments, ix.CheckedSegments
		}
	}
	d.Message = reportMessage(d)
}

// fetchDoctorReport reads the whole report id from the engine of pod.
func (r *SummaIndexReconciler) fetchDoctorReport(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, id string) (*engineclient.DoctorReport, error) {
	c, err := r.engineFor(ctx, index, pod)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.Options.EngineTimeout)
	defer cancel()
	return c.DoctorReport(cctx, id)
}
