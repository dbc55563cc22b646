// Package corpus provides real text for tests: the paragraphs of Newton's
// Opticks shipped with the Go distribution.
package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

var (
	once       sync.Once
	paragraphs []string
	loadErr    error
)

// Path returns the location of the Opticks text in the Go distribution.
func Path() string {
	return filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt")
}

// Paragraphs returns the non-empty paragraphs of Opticks (blank-line
// separated, whitespace collapsed).
func Paragraphs() ([]string, error) {
	once.Do(func() {
		data, err := os.ReadFile(Path())
		if err != nil {
			loadErr = fmt.Errorf("corpus: %w", err)
			return
		}
		for _, p := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n\n") {
			p = strings.Join(strings.Fields(p), " ")
			if len(p) >= 40 {
				paragraphs = append(paragraphs, p)
			}
		}
	})
	return paragraphs, loadErr
}

// Title returns the first few words of a paragraph, used as a title field.
func Title(p string) string {
	words := strings.Fields(p)
	if len(words) > 6 {
		words = words[:6]
	}
	return strings.Join(words, " ")
}
