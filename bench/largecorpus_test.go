package bench

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeFile writes text to dir/rel (gzipped when rel ends in .gz).
func writeFile(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if strings.HasSuffix(rel, ".gz") {
		zw := gzip.NewWriter(f)
		if _, err := zw.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// largeFixture makes three packages' worth of files (RST, HTML, POD) and
// returns their sources.
func largeFixture(t *testing.T) []DocSource {
	t.Helper()
	root := t.TempDir()
	rst, web, pod := filepath.Join(root, "rst"), filepath.Join(root, "web"), filepath.Join(root, "pod")
	writeFile(t, rst, "b/second.rst.gz", "Intro line\n\nPreamble text.\n\nScheduling\n==========\n\nThe scheduler picks tasks.\n")
	writeFile(t, rst, "a/first.txt", "Memory Barriers\n---------------\n\nBarriers order accesses.\n\nEmpty\n-----\n\nLocks\n-----\n\nA lock serializes.\n")
	writeFile(t, rst, "a/ignored.html", "<h1>not read</h1>")
	writeFile(t, web, "page.html", `<html><head><title>Page Title</title><script>var x = "hidden";</script></head>
<body><nav>Skip navigation</nav><p>Lead <b>paragraph</b>.</p>
<h2>First <code>heading</code></h2><p>Alpha text.</p><ul><li>one</li><li>two</li></ul>
<h3>Second</h3><div>Beta text.</div><footer>footer text</footer></body></html>`)
	writeFile(t, web, "genindex.html", "<h1>Index</h1><p>index words</p>")
	writeFile(t, pod, "perlfoo.pod", "=head1 NAME\n\nperlfoo - B<bold> and C<code>\n\n=over 4\n\n=item I<first>\n\nItem text.\n\n=back\n\n=head2 Details\n\nMore L<perlbar|perlbar> text.\n\n=cut\n")
	return []DocSource{
		{Package: "pkg-rst", Dir: rst, Suffixes: []string{".rst", ".txt"}, Format: FormatRST},
		{Package: "pkg-html", Dir: web, Suffixes: []string{".html"}, Skip: []string{"genindex"}, Format: FormatHTML},
		{Package: "pkg-pod", Dir: pod, Suffixes: []string{".pod"}, Format: FormatPOD},
		{Package: "pkg-missing", Dir: filepath.Join(root, "missing"), Suffixes: []string{".txt"}, Format: FormatRST},
	}
}

// TestLargeCorpusSections checks the builder on a fixture: packages in
// the listed order, paths sorted within each, each format split into one
// document per section with the heading as title, markup and skipped
// files left out, and a missing package named.
func TestLargeCorpusSections(t *testing.T) {
	c, err := PrepareLargeCorpus(LargeCorpusOptions{PrepareOptions: PrepareOptions{NoInstall: true}, Sources: largeFixture(t)})
	if err != nil {
		t.Fatal(err)
	}
	want := []Doc{
		{ID: "pkg-rst/a/first.txt#1", Title: "Memory Barriers", Body: "Barriers order accesses."},
		{ID: "pkg-rst/a/first.txt#2", Title: "Locks", Body: "A lock serializes."},
		{ID: "pkg-rst/b/second.rst#1", Title: "Intro line", Body: "Intro line\n\nPreamble text."},
		{ID: "pkg-rst/b/second.rst#2", Title: "Scheduling", Body: "The scheduler picks tasks."},
		{ID: "pkg-html/page.html#1", Title: "Page Title", Body: "Lead paragraph."},
		{ID: "pkg-html/page.html#2", Title: "First heading", Body: "Alpha text.\n\none\n\ntwo"},
		{ID: "pkg-html/page.html#3", Title: "Second", Body: "Beta text."},
		{ID: "pkg-pod/perlfoo.pod#1", Title: "NAME", Body: "perlfoo - bold> and code>\n\nfirst>\n\nItem text."},
		{ID: "pkg-pod/perlfoo.pod#2", Title: "Details", Body: "More perlbar|perlbar> text."},
	}
	if !reflect.DeepEqual(c.Docs, want) {
		t.Errorf("docs:\n got %q\nwant %q", c.Docs, want)
	}
	if c.Files != 4 {
		t.Errorf("files = %d, want 4", c.Files)
	}
	if !strings.Contains(c.Name, "missing: pkg-missing") || !strings.Contains(c.Name, "pkg-html 3") {
		t.Errorf("name %q does not name the sources and the missing package", c.Name)
	}
	var n int64
	for i := range c.Docs {
		n += int64(c.Docs[i].Bytes())
	}
	if c.Bytes != n {
		t.Errorf("bytes = %d, want %d", c.Bytes, n)
	}
}

// TestLargeCorpusDeterministic builds the corpus twice (and a strided
// sample with held-out headings twice) and expects the same documents.
func TestLargeCorpusDeterministic(t *testing.T) {
	srcs := largeFixture(t)
	for _, opts := range []LargeCorpusOptions{{}, {PrepareOptions: PrepareOptions{MaxDocs: 4, HeldOut: 2}}} {
		opts.Sources, opts.NoInstall = srcs, true
		a, err := PrepareLargeCorpus(opts)
		if err != nil {
			t.Fatal(err)
		}
		b, err := PrepareLargeCorpus(opts)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%+v: two builds differ", opts)
		}
		if opts.MaxDocs > 0 && (len(a.Docs) != opts.MaxDocs || len(a.HeldOut) != opts.HeldOut) {
			t.Errorf("sample: %d docs, %d held out; want %d, %d", len(a.Docs), len(a.HeldOut), opts.MaxDocs, opts.HeldOut)
		}
		if q1, q2 := QuerySet(a), QuerySet(b); !reflect.DeepEqual(q1, q2) || a.LinuxDoc {
			t.Errorf("query sets differ or are the linux-doc set: %v %v", q1, q2)
		}
	}
}

// TestLargeCorpusNothing expects an error that names the packages when
// none is installed.
func TestLargeCorpusNothing(t *testing.T) {
	srcs := []DocSource{{Package: "pkg-none", Dir: filepath.Join(t.TempDir(), "none"), Suffixes: []string{".txt"}}}
	_, err := PrepareLargeCorpus(LargeCorpusOptions{PrepareOptions: PrepareOptions{NoInstall: true}, Sources: srcs})
	if err == nil || !strings.Contains(err.Error(), "apt-get install pkg-none") {
		t.Fatalf("err = %v, want one naming apt-get install pkg-none", err)
	}
}
