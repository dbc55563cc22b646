// Package defaults fills unset option fields with their defaults.
package defaults

import "cmp"

// Set sets *v to d when *v is unset: zero, negative or the empty string.
func Set[T cmp.Ordered](v *T, d T) {
	var zero T
	if *v <= zero {
		*v = d
	}
}
