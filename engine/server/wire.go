package server

import (
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
)

// The wire types of the API are defined once, in the client package; the
// engine's packages keep plain structs, and the functions below translate
// them.

// toHeldPublication is a held publication as STATUS and lifecycle show it:
// times in UTC, nextRetry absent once the background retries are
// exhausted.
func toHeldPublication(h index.HeldPublication) client.HeldPublication {
	out := client.HeldPublication{Since: h.Since.UTC(), Attempts: h.Attempts, LastError: h.LastError}
	if !h.NextRetry.IsZero() {
		t := h.NextRetry.UTC()
		out.NextRetry = &t
	}
	return out
}

// toDrainStatus is the answer of the drain routes.
func toDrainStatus(st registry.DrainStatus) client.DrainStatus {
	return client.DrainStatus{Draining: st.Draining, Drained: st.Drained,
		UncommittedDocuments: st.UncommittedDocuments, ActiveOperations: st.ActiveOperations, LastError: st.LastError}
}

// toLifecycle is the answer of GET /v1/admin/lifecycle.
func toLifecycle(est registry.Estimate) client.Lifecycle {
	out := client.Lifecycle{
		DrainEstimateSeconds: est.DrainEstimateSeconds, UncommittedDocuments: est.UncommittedDocuments,
		ActiveOperations: est.ActiveOperations, QuarantinedSegments: est.QuarantinedSegments,
		DurabilityDegraded: est.DurabilityDegraded, FlushDocumentsPerSecond: est.FlushDocumentsPerSecond,
		CommitOverheadSeconds: est.CommitOverheadSeconds, FsyncSeconds: est.FsyncSeconds,
		IndexesWithPendingWrites: est.IndexesWithPendingWrites, CommitsInFlight: est.CommitsInFlight,
	}
	for _, h := range est.HeldPublications {
		out.HeldPublications = append(out.HeldPublications,
			client.IndexHeldPublication{Index: h.Index, HeldPublication: toHeldPublication(h.HeldPublication)})
	}
	return out
}

// DoctorReport is the JSON form of a doctor run's report, as summa-server
// --doctor prints and keeps it and GET /v1/admin/doctor-reports/{id}
// serves it; errText is the run's error ("" when it finished).
func DoctorReport(rep registry.DoctorReport, errText string) client.DoctorReport {
	out := client.DoctorReport{Indexes: make([]client.DoctorIndexReport, 0, len(rep.Indexes)), Error: errText}
	for _, ir := range rep.Indexes {
		removed := make([]string, 0, len(ir.RemovedSegments))
		for _, id := range ir.RemovedSegments {
			removed = append(removed, id.String())
		}
		out.Indexes = append(out.Indexes, client.DoctorIndexReport{
			Name: ir.Name, CheckedSegments: int64(ir.CheckedSegments), RemovedSegments: removed,
			RemovedDocuments: int64(ir.RemovedDocuments), Reasons: ir.Reasons, Error: ir.Error,
		})
	}
	return out
}
