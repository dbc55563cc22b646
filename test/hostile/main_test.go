package hostile

import (
	"fmt"
	"os"
	"testing"

	"github.com/summadev/summa/internal/testing/testserver"
)

var (
	// binPath is the built summa-server, set by TestMain.
	binPath string
	// buildErr is why the binary could not be built, if it could not.
	buildErr error
)

// TestMain builds ./cmd/summa-server once.
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "summa-hostile-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(2)
	}
	binPath, _, buildErr = testserver.Build(tmp)
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}
