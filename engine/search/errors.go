package search

import "fmt"

// QueryError is a query or request the engine refuses: bad syntax, an
// unknown or unsearchable field, a vector of the wrong size, a limit out of
// range. The server answers it with InvalidQuery (400).
type QueryError struct {
	// Reason says what is wrong, in words fit for the client.
	Reason string
}

// Error returns the reason prefixed with "invalid query: ".
func (e *QueryError) Error() string { return "invalid query: " + e.Reason }

// queryErr builds a *QueryError from a format.
func queryErr(format string, args ...any) error {
	return &QueryError{Reason: fmt.Sprintf(format, args...)}
}
