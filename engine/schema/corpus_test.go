package schema

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// linuxDocDir holds the Debian linux-doc sources that make bench's corpus;
// the Go distribution's sources stand in where it is not installed.
const linuxDocDir = "/usr/share/doc/linux-doc-6.1/Documentation"

// corpusDoc is one document of real text: a path id, a title and a body.
type corpusDoc struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// realCorpus reads up to maxBytes of real text, the linux-doc sources when
// installed or else the Go distribution's, split into documents of one
// section (paragraphs up to about 2 KB) each, in path order.
func realCorpus(tb testing.TB, maxBytes int) []corpusDoc {
	tb.Helper()
	root, exts := linuxDocDir, []string{".rst", ".txt"}
	if _, err := os.Stat(root); err != nil {
		root, exts = filepath.Join(runtime.GOROOT(), "src"), []string{".go"}
	}
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimSuffix(d.Name(), ".gz")
		for _, e := range exts {
			if strings.HasSuffix(name, e) {
				paths = append(paths, p)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(paths)
	var docs []corpusDoc
	total := 0
	for _, p := range paths {
		if total >= maxBytes {
			break
		}
		text, err := readMaybeGzip(p)
		if err != nil {
			tb.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		for i, sec := range sections(text) {
			title, body, _ := strings.Cut(sec, "\n")
			docs = append(docs, corpusDoc{ID: rel + "#" + itoa(i), Title: title, Body: body})
			total += len(sec)
		}
	}
	if len(docs) == 0 {
		tb.Fatalf("no text under %s", root)
	}
	return docs
}

// sections cuts text at blank lines into pieces of about 2 KB.
func sections(text string) []string {
	var out []string
	var cur strings.Builder
	for _, para := range strings.SplitAfter(text, "\n\n") {
		cur.WriteString(para)
		if cur.Len() >= 2048 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func readMaybeGzip(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	if strings.HasSuffix(p, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return "", err
		}
		defer zr.Close()
		r = zr
	}
	b, err := io.ReadAll(r)
	return strings.ToValidUTF8(string(b), "\uFFFD"), err
}

// ndjson encodes documents the way bench does (encoding/json, HTML
// escaping on).
func ndjson(tb testing.TB, docs []corpusDoc) [][]byte {
	tb.Helper()
	out := make([][]byte, len(docs))
	for i := range docs {
		b, err := json.Marshal(&docs[i])
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = b
	}
	return out
}
