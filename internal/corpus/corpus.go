// Package corpus provides real text for tests and the demos: the
// paragraphs of Newton's Opticks shipped with the Go distribution, and
// the documents and schema the demos index them as.
package corpus

import (
	"encoding/json"
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

// Schema is the schema of the documents Document makes: the primary path
// id, the title, the body BP may reorder on (stored when storeBody) and
// the paragraph's number.
func Schema(storeBody bool) string {
	return fmt.Sprintf(`{"fields":[
 {"name":"id","type":"text","primary":true},
 {"name":"title","type":"text"},
 {"name":"body","type":"text","reorder":true,"stored":%t},
 {"name":"paragraph","type":"u64"}
]}`, storeBody)
}

// Document is paragraph number i, p, as a JSON document of Schema: id
// "p0042", its Title, the paragraph as body, and i.
func Document(i int, p string) []byte {
	doc, err := json.Marshal(map[string]any{"id": fmt.Sprintf("p%04d", i), "title": Title(p), "body": p, "paragraph": i})
	if err != nil {
		panic(fmt.Sprintf("corpus: marshal a map of strings and ints: %v", err))
	}
	return doc
}
