package blackbox

import (
	"fmt"
	"os"
	"testing"
)

// TestMain builds ./cmd/summa-server once for every test.
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "summa-blackbox-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "blackbox:", err)
		os.Exit(2)
	}
	buildErr = buildServer(tmp)
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}
