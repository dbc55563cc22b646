// Package cmdmain holds what the benchmark commands' main functions share:
// a context that SIGINT or SIGTERM cancels, so that a measurement stops
// and cleans its work directory up, and the "name: error" line and exit
// status of a failed run.
package cmdmain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// usageError is an error Run exits with status 2 on (a bad flag or
// selection), where a failed measurement exits with 1.
type usageError struct{ err error }

// Error returns the wrapped error's text.
func (u usageError) Error() string { return u.err.Error() }

// Unwrap returns the wrapped error.
func (u usageError) Unwrap() error { return u.err }

// Usage returns an error that makes Run exit with status 2.
func Usage(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// Run calls run with a context cancelled on SIGINT or SIGTERM. When run
// fails it prints "name: error" to stderr and exits with status 1 (2 for
// an error made by Usage).
func Run(name string, run func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	if errors.As(err, new(usageError)) {
		os.Exit(2)
	}
	os.Exit(1)
}
