package cmdmain

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRunExitStatus runs Run in a child process (this test binary again)
// and checks the exit status and the error line of each outcome.
func TestRunExitStatus(t *testing.T) {
	if mode := os.Getenv("CMDMAIN_CHILD"); mode != "" {
		Run("child", func(ctx context.Context) error {
			switch mode {
			case "fail":
				return errors.New("boom")
			case "usage":
				return Usage("bad flag %q", "-x")
			}
			return ctx.Err()
		})
		os.Exit(0)
	}
	for _, c := range []struct {
		mode, stderr string
		code         int
	}{{"ok", "", 0}, {"fail", "child: boom\n", 1}, {"usage", "child: bad flag \"-x\"\n", 2}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRunExitStatus$")
		cmd.Env = append(os.Environ(), "CMDMAIN_CHILD="+c.mode)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		if code != c.code || stderr.String() != c.stderr {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", c.mode, code, stderr.String(), c.code, c.stderr)
		}
	}
}
