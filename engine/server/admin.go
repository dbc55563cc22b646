package server

import (
	"net/http"

	"github.com/summadev/summa/engine/registry"
)

// startDrain refuses new writes and starts committing everything accepted
// in the background; it answers 202 with the drain status. Repeating it is
// harmless.
func (s *Server) startDrain(w http.ResponseWriter, r *http.Request) error {
	s.r.StartDrain()
	s.log.Info("Drain started")
	writeJSON(w, http.StatusAccepted, s.r.DrainStatus())
	return nil
}

// drainStatus answers
// {"draining","drained","uncommittedDocuments","activeOperations"}.
func (s *Server) drainStatus(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.r.DrainStatus())
	return nil
}

// resume admits writes again, except once process shutdown began (503
// ShuttingDown: the shutdown's drain must not be undone).
func (s *Server) resume(w http.ResponseWriter, r *http.Request) error {
	if s.shuttingDown.Load() {
		return unavailable(CodeShuttingDown, retryDraining, "%v: the server is stopping and stays drained", registry.ErrShuttingDown)
	}
	s.r.Resume()
	s.log.Info("Writes resumed")
	writeJSON(w, http.StatusOK, s.r.DrainStatus())
	return nil
}

// lifecycle answers the drain estimate and its inputs.
func (s *Server) lifecycle(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.r.Lifecycle())
	return nil
}
