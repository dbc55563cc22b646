package server

import (
	"net/http"
	"strconv"

	"github.com/summadev/summa/engine/registry"
)

// startDrain refuses new writes and starts committing everything accepted
// in the background; it answers 202 with the drain status. Repeating it is
// harmless.
func (s *Server) startDrain(w http.ResponseWriter, r *http.Request) error {
	s.r.StartDrain()
	s.log.Info("Drain started")
	return s.writeDrainStatus(w, http.StatusAccepted)
}

// drainStatus answers
// {"draining","drained","uncommittedDocuments","activeOperations"}.
func (s *Server) drainStatus(w http.ResponseWriter, r *http.Request) error {
	return s.writeDrainStatus(w, http.StatusOK)
}

// resume admits writes again, except once process shutdown began (503
// ShuttingDown: the shutdown's drain must not be undone).
func (s *Server) resume(w http.ResponseWriter, r *http.Request) error {
	if s.shuttingDown.Load() {
		return unavailable(CodeShuttingDown, retryDraining, "%v: the server is stopping and stays drained", registry.ErrShuttingDown)
	}
	s.r.Resume()
	s.log.Info("Writes resumed")
	return s.writeDrainStatus(w, http.StatusOK)
}

// writeDrainStatus answers code and the drain status.
func (s *Server) writeDrainStatus(w http.ResponseWriter, code int) error {
	writeJSON(w, code, toDrainStatus(s.r.DrainStatus()))
	return nil
}

// lifecycle answers the drain estimate and its inputs.
func (s *Server) lifecycle(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, toLifecycle(s.r.Lifecycle()))
	return nil
}

// doctorReport answers the whole report of the doctor run kept under
// {id} (summa-server --doctor --report-id ID), as the doctor wrote it:
// 404 NotFound when none is kept, 400 BadRequest for an ID that cannot
// name one.
func (s *Server) doctorReport(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	data, err := s.r.DoctorReport(id)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	return nil
}
