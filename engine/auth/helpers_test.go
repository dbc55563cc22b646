package auth

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
)

// testLogger logs to the test.
func testLogger(t *testing.T) logr.Logger { return testr.New(t) }
