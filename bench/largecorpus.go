package bench

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Format is how a source file of the large corpus is split into sections.
type Format string

// The source formats of the large corpus.
const (
	// FormatRST is reStructuredText or RST-like plain text (asciidoc and
	// info files underline their headings the same way): splitSections.
	FormatRST Format = "rst"
	// FormatHTML is HTML: a section per h1-h6 heading (splitHTML).
	FormatHTML Format = "html"
	// FormatPOD is Perl's Plain Old Documentation: a section per =headN
	// (splitPOD).
	FormatPOD Format = "pod"
)

// DocSource is one Debian documentation package of the large corpus: the
// files under Dir whose names (without .gz) end in one of Suffixes.
type DocSource struct {
	// Package is the Debian package that installs Dir.
	Package string
	// Prefix starts the ids of its documents (Package when empty).
	Prefix string
	// Dir is the directory read (recursively).
	Dir string
	// Suffixes select the files (matched after stripping ".gz").
	Suffixes []string
	// Skip lists path fragments (relative to Dir) whose files are not
	// read (copies of text read elsewhere, indexes, navigation pages).
	Skip []string
	// Format splits the files into sections.
	Format Format
}

// LargeSources are the packages of the large corpus, in corpus order:
// linux-doc-6.1 (the small corpus's text) followed by more of Debian's
// documentation, chosen for their amount of real prose. The order and the
// sort of the paths within each package make the corpus deterministic
// for given package versions.
var LargeSources = []DocSource{
	{Package: LinuxDocPackage, Dir: LinuxDocDir, Suffixes: []string{".rst", ".txt"}, Format: FormatRST},
	{Package: "python3.11-doc", Dir: "/usr/share/doc/python3.11/html/_sources", Suffixes: []string{".rst.txt"}, Format: FormatRST},
	{Package: "python-django-doc", Dir: "/usr/share/doc/python-django-doc/html", Suffixes: []string{".html"},
		Skip: []string{"_modules/", "_static/", "genindex", "py-modindex", "search.html"}, Format: FormatHTML},
	{Package: "git-doc", Dir: "/usr/share/doc/git-doc", Suffixes: []string{".txt"}, Format: FormatRST},
	{Package: "perl-doc", Dir: "/usr/share/perl/5.36/pod", Suffixes: []string{".pod"}, Format: FormatPOD},
	{Package: "postgresql-doc-15", Dir: "/usr/share/doc/postgresql-doc-15/html", Suffixes: []string{".html"}, Format: FormatHTML},
	{Package: "openjdk-17-doc", Dir: "/usr/share/doc/openjdk-17-doc/api", Suffixes: []string{".html"},
		Skip:   []string{"index-files/", "-tree.html", "-summary.html", "allclasses", "allpackages", "/class-use/", "/package-use.html", "overview-", "deprecated-list", "search.html", "help-doc", "constant-values", "serialized-form", "index.html", "legal/"},
		Format: FormatHTML},
	{Package: "libboost1.74-doc", Dir: "/usr/share/doc/libboost1.74-doc/doc/html", Suffixes: []string{".html"}, Format: FormatHTML},
	{Package: "qtbase5-doc-html", Dir: "/usr/share/qt5/doc", Suffixes: []string{".html"}, Skip: []string{"-members.html", "-obsolete.html"}, Format: FormatHTML},
	{Package: "python-sqlalchemy-doc", Dir: "/usr/share/doc/python-sqlalchemy-doc/rst", Suffixes: []string{".rst"}, Format: FormatRST},
	{Package: "nodejs-doc", Dir: "/usr/share/doc/nodejs/api", Suffixes: []string{".html"}, Skip: []string{"/all.html", "/index.html"}, Format: FormatHTML},
	{Package: "erlang-doc", Dir: "/usr/share/doc/erlang-doc", Suffixes: []string{".html"}, Skip: []string{"/java/", "index.html", "_app.html"}, Format: FormatHTML},
	{Package: "libglib2.0-doc", Prefix: "libglib2.0-doc/glib", Dir: "/usr/share/gtk-doc/html/glib", Suffixes: []string{".html"}, Format: FormatHTML},
	{Package: "libglib2.0-doc", Prefix: "libglib2.0-doc/gobject", Dir: "/usr/share/gtk-doc/html/gobject", Suffixes: []string{".html"}, Format: FormatHTML},
	{Package: "libglib2.0-doc", Prefix: "libglib2.0-doc/gio", Dir: "/usr/share/gtk-doc/html/gio", Suffixes: []string{".html"}, Format: FormatHTML},
	{Package: "libgtk-3-doc", Prefix: "libgtk-3-doc/gtk3", Dir: "/usr/share/gtk-doc/html/gtk3", Suffixes: []string{".html"}, Format: FormatHTML},
	{Package: "libgtk-3-doc", Prefix: "libgtk-3-doc/gdk3", Dir: "/usr/share/gtk-doc/html/gdk3", Suffixes: []string{".html"}, Format: FormatHTML},
	{Package: "libgtk-4-doc", Dir: "/usr/share/doc/libgtk-4-doc", Suffixes: []string{".html"}, Format: FormatHTML},
}

// LargeCorpusOptions choose the large corpus.
type LargeCorpusOptions struct {
	PrepareOptions
	// Sources replaces LargeSources (tests).
	Sources []DocSource
}

// PrepareLargeCorpus loads every source of the large corpus, installing
// the packages that are missing with apt-get. A source that is still
// missing is named in the corpus's Name and in the log; the corpus is an
// error only when no source has any document.
func PrepareLargeCorpus(opts LargeCorpusOptions) (*Corpus, error) {
	log := orDiscard(opts.Log)
	srcs := opts.Sources
	if srcs == nil {
		srcs = LargeSources
	}
	if !opts.NoInstall {
		installSources(srcs, log)
	}
	c := &Corpus{Root: "/usr/share/doc"}
	var used, missing []string
	for _, s := range srcs {
		docs, files, err := loadSource(s)
		if err != nil {
			fmt.Fprintf(log, "corpus (large): %s: %v\n", s.prefix(), err)
			if !slices.Contains(missing, s.Package) {
				missing = append(missing, s.Package)
			}
			continue
		}
		fmt.Fprintf(log, "corpus (large): %s: %d sections from %d files\n", s.prefix(), len(docs), files)
		used = append(used, fmt.Sprintf("%s %d", s.prefix(), len(docs)))
		c.Docs = append(c.Docs, docs...)
		c.Files += files
	}
	if len(c.Docs) == 0 {
		return nil, fmt.Errorf("corpus (large): no documents: missing %s (install them with apt-get install %s)", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	c.Name = "Debian documentation packages, one document per section (" + strings.Join(used, ", ") + ")"
	if len(missing) > 0 {
		c.Name += "; missing: " + strings.Join(missing, ", ")
	}
	c.sample(opts.HeldOut, opts.MaxDocs)
	c.sumBytes()
	return c, nil
}

// installSources installs the packages whose directories are missing, or
// says why it cannot.
func installSources(srcs []DocSource, log io.Writer) {
	var pkgs []string
	for _, s := range srcs {
		if _, err := os.Stat(s.Dir); err != nil && !slices.Contains(pkgs, s.Package) {
			pkgs = append(pkgs, s.Package)
		}
	}
	if len(pkgs) == 0 {
		return
	}
	if os.Getuid() != 0 {
		fmt.Fprintf(log, "corpus (large): not root, cannot install %s: run apt-get install %s as root\n", strings.Join(pkgs, ", "), strings.Join(pkgs, " "))
		return
	}
	if err := aptGetAvailable(); err != nil {
		fmt.Fprintf(log, "corpus (large): %v: cannot install %s (Debian packages); the large corpus is built from what is installed\n", err, strings.Join(pkgs, ", "))
		return
	}
	AptInstall("corpus (large)", "documentation packages missing", pkgs, log)
}

// loadSource reads one source's files in path order and splits them.
func loadSource(s DocSource) ([]Doc, int, error) {
	if _, err := os.Stat(s.Dir); err != nil {
		return nil, 0, fmt.Errorf("%s is missing (package not installed)", s.Dir)
	}
	// Debian links some documentation directories to another package's.
	root, err := filepath.EvalSymlinks(s.Dir)
	if err != nil {
		return nil, 0, fmt.Errorf("resolve %s: %w", s.Dir, err)
	}
	s.Dir = root
	var paths []string
	err = filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !s.wants(p) {
			return nil
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("walk %s: %w", s.Dir, err)
	}
	sort.Strings(paths)
	var docs []Doc
	for _, p := range paths {
		text, err := readMaybeGzip(p)
		if err != nil {
			return nil, 0, fmt.Errorf("read %s: %w", p, err)
		}
		rel, _ := filepath.Rel(s.Dir, p)
		rel = s.prefix() + "/" + strings.TrimSuffix(filepath.ToSlash(rel), ".gz")
		docs = append(docs, splitFormat(s.Format, rel, text)...)
	}
	return docs, len(paths), nil
}

// prefix starts the ids of the source's documents.
func (s DocSource) prefix() string {
	if s.Prefix != "" {
		return s.Prefix
	}
	return s.Package
}

// wants reports whether the file at p is read.
func (s DocSource) wants(p string) bool {
	name := strings.TrimSuffix(p, ".gz")
	ok := false
	for _, suf := range s.Suffixes {
		ok = ok || strings.HasSuffix(name, suf)
	}
	if !ok {
		return false
	}
	rel := filepath.ToSlash(strings.TrimPrefix(p, s.Dir))
	for _, k := range s.Skip {
		if strings.Contains(rel, k) {
			return false
		}
	}
	return true
}

// splitFormat splits text into sections by its format.
func splitFormat(f Format, rel, text string) []Doc {
	switch f {
	case FormatHTML:
		return splitHTML(rel, text)
	case FormatPOD:
		return splitPOD(rel, text)
	default:
		return splitSections(rel, text)
	}
}
