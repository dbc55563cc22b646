package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/replication"
	"github.com/summadev/summa/engine/server"
)

// TestSentinelAnswers: the doctor-report and replication-hold errors, as
// their packages wrap them, get their answer from the one mapping every
// route uses.
func TestSentinelAnswers(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("%w: %q", registry.ErrInvalidReportID, "R1"), http.StatusBadRequest, client.CodeBadRequest},
		{fmt.Errorf("%w: %s", registry.ErrDoctorReportNotFound, "r1"), http.StatusNotFound, client.CodeNotFound},
		{fmt.Errorf("open: %w", replication.ErrNoHold), http.StatusNotFound, client.CodeHoldNotFound},
		{fmt.Errorf("open: %w", replication.ErrNotInHold), http.StatusNotFound, client.CodeNotFound},
	} {
		if status, code, retryable := server.Answer(c.err); status != c.status || code != c.code || retryable {
			t.Errorf("%v: %d %s retryable=%v, want %d %s", c.err, status, code, retryable, c.status, c.code)
		}
	}
}
