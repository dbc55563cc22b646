package main

import (
	"errors"
	"fmt"
)

// flagCheck is one rule of the flags' values: err is what a broken rule
// returns.
type flagCheck struct {
	broken bool
	err    error
}

// firstBroken returns the error of the first broken rule of checks, in
// their order (nil when every rule holds).
func firstBroken(checks ...flagCheck) error {
	for _, c := range checks {
		if c.broken {
			return c.err
		}
	}
	return nil
}

// rule is a check whose error says msg.
func rule(broken bool, msg string) flagCheck {
	return flagCheck{broken: broken, err: errors.New(msg)}
}

// positive checks that flag's value v is above 0.
func positive[T ~int | ~int64](flag string, v T) flagCheck {
	return rule(v <= 0, "--"+flag+" must be positive")
}

// notNegative checks that flag's value v is at least 0.
func notNegative[T ~int | ~int64](flag string, v T) flagCheck {
	return rule(v < 0, "--"+flag+" must not be negative")
}

// required checks that flag (or its environment variable) was given a
// value v; the error is prefixed with cmd ("" for the server's own flags).
func required(cmd, flag, v string) flagCheck {
	msg := fmt.Sprintf("--%s (or %s) is required", flag, envName(flag))
	if cmd != "" {
		msg = cmd + ": " + msg
	}
	return rule(v == "", msg)
}
