// Package corpustest loads the test corpus for tests: a missing or empty
// text fails the test, never skips it, so that a machine without the text
// cannot pass by running less.
package corpustest

import (
	"fmt"
	"os"
	"testing"

	"github.com/summadev/summa/internal/corpus"
)

// Paragraphs returns the paragraphs of the corpus, failing t when the text
// is missing or holds none.
func Paragraphs(t testing.TB) []string {
	t.Helper()
	ps, err := corpus.Paragraphs()
	if err == nil && len(ps) == 0 {
		err = fmt.Errorf("corpus: %s holds no paragraph", corpus.Path())
	}
	if err != nil {
		t.Fatalf("the test corpus is missing (it ships with the Go distribution): %v", err)
	}
	return ps
}

// Text returns the corpus's whole text, failing t when it is missing.
func Text(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(corpus.Path())
	if err != nil || len(data) == 0 {
		t.Fatalf("the test corpus is missing (it ships with the Go distribution): %v", err)
	}
	return string(data)
}
