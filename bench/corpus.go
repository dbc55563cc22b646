// Package bench compares the Summa engine with Bleve v2 (scorch) on a real
// corpus, on the same machine and disk, and measures the physical floor of
// that disk. Its command is bench/cmd/summa-bench.
package bench

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"unicode/utf8"
)

// LinuxDocPackage is the Debian package whose documentation is the corpus.
const LinuxDocPackage = "linux-doc-6.1"

// LinuxDocDir is where LinuxDocPackage installs its reStructuredText and
// plain-text sources (gzipped, as Debian ships them; the html/ tree next to
// it holds rendered copies of the same files and is not used).
const LinuxDocDir = "/usr/share/doc/" + LinuxDocPackage + "/Documentation"

// Doc is one benchmark document: a path id, a title and a body.
type Doc struct {
	// ID is the source path relative to the corpus root, with "#n" for
	// the n-th section of the file.
	ID string
	// Title is the section heading (or the file's first line).
	Title string
	// Body is the section text.
	Body string
}

// Bytes returns the document's text size (id + title + body).
func (d *Doc) Bytes() int { return len(d.ID) + len(d.Title) + len(d.Body) }

// Corpus is the prepared document set.
type Corpus struct {
	// Name says where the documents come from.
	Name string
	// Root is the directory the documents were read from.
	Root string
	// Files is the number of source files read.
	Files int
	// Docs in a deterministic order.
	Docs []Doc
	// Bytes is the sum of Doc.Bytes.
	Bytes int64
	// LinuxDoc is true for the linux-doc corpus (which has a fixed query set).
	LinuxDoc bool
	// HeldOut are the sections held out of Docs (never indexed) whose
	// headings are the heading queries.
	HeldOut []Doc
}

// MB returns the corpus size in MB (10^6 bytes).
func (c *Corpus) MB() float64 { return float64(c.Bytes) / 1e6 }

// PrepareOptions are the options the small corpus (CorpusOptions) and the
// large one (LargeCorpusOptions) share.
type PrepareOptions struct {
	// MaxDocs, when positive, keeps an evenly strided sample of at most
	// MaxDocs documents (the heading queries are held out first).
	MaxDocs int
	// HeldOut is the number of sections held out of the index whose
	// headings become queries (see HeadingQueries); chosen before MaxDocs
	// samples the rest, so the queries do not depend on the sample.
	HeldOut int
	// NoInstall never runs apt-get.
	NoInstall bool
	// Log receives progress lines (may be nil).
	Log io.Writer
}

// CorpusOptions choose the corpus.
type CorpusOptions struct {
	PrepareOptions
	// Dir overrides LinuxDocDir (tests).
	Dir string
	// ForceFallback uses the Go source corpus.
	ForceFallback bool
	// Shuffle puts the documents in a fixed pseudo-random order instead of
	// path order (where the sections of one file are adjacent).
	Shuffle bool
}

// PrepareCorpus loads the linux-doc corpus, installing the Debian package
// when it is missing, or falls back to the comments and testdata of the Go
// distribution when the package cannot be had.
func PrepareCorpus(opts CorpusOptions) (*Corpus, error) {
	log := orDiscard(opts.Log)
	dir := opts.Dir
	if dir == "" {
		dir = LinuxDocDir
	}
	var c *Corpus
	var err error
	if !opts.ForceFallback {
		if _, statErr := os.Stat(dir); statErr != nil && opts.Dir == "" && !opts.NoInstall {
			installLinuxDoc(log)
		}
		if _, statErr := os.Stat(dir); statErr == nil {
			c, err = loadLinuxDoc(dir)
			if err != nil {
				fmt.Fprintf(log, "corpus: %s unreadable (%v); falling back to the Go distribution\n", dir, err)
				c = nil
			} else if len(c.Docs) == 0 {
				fmt.Fprintf(log, "corpus: %s has no documents; falling back to the Go distribution\n", dir)
				c = nil
			}
		} else {
			fmt.Fprintf(log, "corpus: %s is missing; falling back to the Go distribution\n", dir)
		}
	}
	if c == nil {
		if c, err = loadGoSource(filepath.Join(runtime.GOROOT(), "src")); err != nil {
			return nil, err
		}
	}
	c.sample(opts.HeldOut, opts.MaxDocs)
	if opts.Shuffle {
		c.Docs = Shuffled(c.Docs)
		c.Name += ", shuffled"
	}
	c.sumBytes()
	return c, nil
}

// sample holds heldOut documents out of c.Docs into c.HeldOut (see
// holdOut), then keeps an evenly strided sample of at most maxDocs of the
// rest (when maxDocs is positive), saying so in c.Name.
func (c *Corpus) sample(heldOut, maxDocs int) {
	c.Docs, c.HeldOut = holdOut(c.Docs, heldOut)
	if maxDocs > 0 && len(c.Docs) > maxDocs {
		c.Docs = stride(c.Docs, maxDocs)
		c.Name += fmt.Sprintf(" (strided sample of %d documents)", len(c.Docs))
	}
}

// sumBytes sets c.Bytes to the bytes of c.Docs.
func (c *Corpus) sumBytes() {
	c.Bytes = 0
	for i := range c.Docs {
		c.Bytes += int64(c.Docs[i].Bytes())
	}
}

// orDiscard is log, or io.Discard when log is nil.
func orDiscard(log io.Writer) io.Writer {
	if log == nil {
		return io.Discard
	}
	return log
}

// stride keeps n documents spread evenly over docs.
func stride(docs []Doc, n int) []Doc {
	out := make([]Doc, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, docs[i*len(docs)/n])
	}
	return out
}

// installLinuxDoc runs apt-get install (and apt-get update once if the
// first attempt fails, as it does with stale package lists).
func installLinuxDoc(log io.Writer) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		fmt.Fprintf(log, "corpus: apt-get not found, cannot install %s\n", LinuxDocPackage)
		return
	}
	fmt.Fprintf(log, "corpus: installing %s with apt-get ...\n", LinuxDocPackage)
	install := func() error {
		cmd := exec.Command("apt-get", "install", "-y", "-q", LinuxDocPackage)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, lastLines(out, 3))
		}
		return nil
	}
	if err := install(); err != nil {
		fmt.Fprintf(log, "corpus: apt-get install failed (%v); running apt-get update\n", err)
		if out, err := exec.Command("apt-get", "update", "-q").CombinedOutput(); err != nil {
			fmt.Fprintf(log, "corpus: apt-get update failed: %v: %s\n", err, lastLines(out, 3))
			return
		}
		if err := install(); err != nil {
			fmt.Fprintf(log, "corpus: apt-get install failed again: %v\n", err)
		}
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// filesUnder lists the files under dir that keep selects, sorted by path.
func filesUnder(dir string, keep func(p string, d fs.DirEntry) bool) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && keep(p, d) {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	return paths, err
}

// loadLinuxDoc reads every .rst and .txt file (gzipped or not) under dir,
// in path order, and splits each into one document per section.
func loadLinuxDoc(dir string) (*Corpus, error) {
	paths, err := filesUnder(dir, func(p string, d fs.DirEntry) bool {
		name := strings.TrimSuffix(d.Name(), ".gz")
		return strings.HasSuffix(name, ".rst") || strings.HasSuffix(name, ".txt")
	})
	if err != nil {
		return nil, err
	}
	c := &Corpus{Name: "Debian " + LinuxDocPackage + " (.rst/.txt, one document per section)", Root: dir, LinuxDoc: true}
	for _, p := range paths {
		text, err := readMaybeGzip(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		rel, _ := filepath.Rel(dir, p)
		rel = strings.TrimSuffix(filepath.ToSlash(rel), ".gz")
		c.Docs = append(c.Docs, splitSections(rel, text)...)
		c.Files++
	}
	return c, nil
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
	if err != nil {
		return "", err
	}
	return sanitize(b), nil
}

// sanitize makes text valid UTF-8 without U+FFFD (Bleve's character
// tokenizer stops at the first RuneError, ours does not: the corpus must
// not depend on that difference) and without NUL bytes.
func sanitize(b []byte) string {
	s := strings.ToValidUTF8(string(b), " ")
	s = strings.ReplaceAll(s, string(utf8.RuneError), " ")
	s = strings.ReplaceAll(s, "\x00", " ")
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// adornment reports whether line is an RST section adornment: one
// punctuation character repeated at least three times.
func adornment(line string) (byte, bool) {
	line = strings.TrimRight(line, " \t")
	if len(line) < 3 {
		return 0, false
	}
	c := line[0]
	if !strings.ContainsRune("=-~^*#\"'`+:._<>!$%&(),/;?@[\\]{|}", rune(c)) {
		return 0, false
	}
	for i := 1; i < len(line); i++ {
		if line[i] != c {
			return 0, false
		}
	}
	return c, true
}

// splitSections splits an RST (or RST-like plain text) file on its section
// headings: a text line underlined (and optionally overlined) by an
// adornment at least as long as the text. The text before the first
// heading is a section titled by the file's first line. Sections without
// body text are dropped; a file without headings is one document.
func splitSections(rel, text string) []Doc {
	lines := strings.Split(text, "\n")
	var docs []Doc
	title := firstLine(lines, rel)
	start := 0
	n := 0
	emit := func(end int) {
		end = max(end, start)
		var kept []string
		for _, l := range lines[start:end] {
			if !strings.Contains(l, "SPDX-License-Identifier") {
				kept = append(kept, l)
			}
		}
		body := strings.TrimSpace(strings.Join(kept, "\n"))
		if body == "" {
			return
		}
		n++
		docs = append(docs, Doc{ID: fmt.Sprintf("%s#%d", rel, n), Title: title, Body: body})
	}
	for i := 0; i+1 < len(lines); i++ {
		head := strings.TrimSpace(lines[i])
		if head == "" || lines[i][0] == ' ' || lines[i][0] == '\t' {
			continue
		}
		if _, isAdorn := adornment(lines[i]); isAdorn {
			continue
		}
		c, ok := adornment(lines[i+1])
		if !ok || utf8.RuneCountInString(strings.TrimRight(lines[i+1], " \t")) < utf8.RuneCountInString(head) {
			continue
		}
		// Heading at line i; an overline of the same character belongs to it.
		end := i
		if i > 0 {
			if oc, over := adornment(lines[i-1]); over && oc == c {
				end = i - 1
			}
		}
		emit(end)
		title = head
		start = i + 2
		i++
	}
	emit(len(lines))
	return docs
}

// firstLine returns the first line of text that is not markup, for the
// title of a file's preamble (or the file name when there is none).
func firstLine(lines []string, rel string) string {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "..") {
			continue
		}
		if _, ok := adornment(t); ok {
			continue
		}
		if len(t) > 120 {
			t = t[:120]
			t = strings.ToValidUTF8(t, "")
		}
		return t
	}
	return filepath.Base(rel)
}

// loadGoSource is the fallback corpus: the comment blocks of the Go
// distribution's .go files (one document per block of at least three
// lines, titled by its first line) and its testdata text files split into
// blank-line separated chunks of about 40 lines.
func loadGoSource(src string) (*Corpus, error) {
	paths, err := filesUnder(src, func(p string, _ fs.DirEntry) bool {
		return strings.HasSuffix(p, ".go") || (strings.HasSuffix(p, ".txt") && strings.Contains(p, "/testdata/"))
	})
	if err != nil {
		return nil, fmt.Errorf("corpus: fallback %s: %w", src, err)
	}
	c := &Corpus{Name: "Go distribution (" + runtime.Version() + ") comments and testdata text", Root: src}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		text := sanitize(b)
		if strings.HasSuffix(p, ".go") {
			c.Docs = append(c.Docs, goComments(rel, text)...)
		} else {
			c.Docs = append(c.Docs, textChunks(rel, text)...)
		}
		c.Files++
	}
	if len(c.Docs) == 0 {
		return nil, fmt.Errorf("corpus: fallback %s has no documents", src)
	}
	return c, nil
}

func goComments(rel, text string) []Doc {
	var docs []Doc
	var block []string
	flush := func() {
		if len(block) >= 3 {
			docs = append(docs, Doc{ID: fmt.Sprintf("%s#%d", rel, len(docs)+1), Title: block[0], Body: strings.Join(block[1:], "\n")})
		}
		block = block[:0]
	}
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "//") && !strings.HasPrefix(t, "//go:") {
			block = append(block, strings.TrimSpace(strings.TrimPrefix(t, "//")))
			continue
		}
		flush()
	}
	flush()
	return docs
}

func textChunks(rel, text string) []Doc {
	var docs []Doc
	var chunk []string
	flush := func() {
		body := strings.TrimSpace(strings.Join(chunk, "\n"))
		if body != "" {
			docs = append(docs, Doc{ID: fmt.Sprintf("%s#%d", rel, len(docs)+1), Title: firstLine(chunk, rel), Body: body})
		}
		chunk = chunk[:0]
	}
	for _, l := range strings.Split(text, "\n") {
		chunk = append(chunk, l)
		if len(chunk) >= 40 && strings.TrimSpace(l) == "" {
			flush()
		}
	}
	flush()
	return docs
}

// jsonDoc is the JSON form of a Doc in the benchmark schema.
type jsonDoc struct {
	ID    string    `json:"id"`
	Title string    `json:"title"`
	Text  [2]string `json:"text"`
}

// NDJSON returns each document as one JSON object in the benchmark schema
// ({"id":..,"title":..,"text":[title, body]}).
func NDJSON(docs []Doc) [][]byte {
	out := make([][]byte, len(docs))
	for i := range docs {
		b, err := json.Marshal(jsonDoc{ID: docs[i].ID, Title: docs[i].Title, Text: [2]string{docs[i].Title, docs[i].Body}})
		if err != nil {
			panic(err) // strings always marshal
		}
		out[i] = b
	}
	return out
}

// Shuffled returns a copy of docs in a fixed pseudo-random order (PCG
// seeded 1, 2): how documents reach a real index, not grouped by topic.
func Shuffled(docs []Doc) []Doc {
	out := append([]Doc(nil), docs...)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
