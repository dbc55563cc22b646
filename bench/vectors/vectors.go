// Package vectors benchmarks the engine's vector indexes (dense binary IVF,
// Seismic for sparse vectors, block-max pruning) on vectors derived
// deterministically from real text, against exact answers computed in the
// same run, and the binary IVF against FAISS's IndexBinaryIVF and hnswlib
// (peers.go, through the Python driver of peers/). Its command is
// bench/cmd/bench-vectors; each index's Section lives in a file of its
// own, and Sections lists them in run order.
package vectors

import (
	"context"
	"fmt"
	"io"
)

// Config is what every section is given.
type Config struct {
	// Quick shrinks the data sets and rounds so the run takes a few minutes.
	Quick bool
	// WorkDir is a scratch directory the section may fill; it is removed
	// after the run.
	WorkDir string
	// CacheDir keeps derived data sets between runs (may be empty: no cache).
	CacheDir string
	// Log receives progress lines.
	Log io.Writer
	// Out receives the report lines (the forms the issues give).
	Out io.Writer
}

// Logf writes one progress line.
func (c Config) Logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// Printf writes one report line.
func (c Config) Printf(format string, args ...any) {
	fmt.Fprintf(c.Out, format+"\n", args...)
}

// Section is one part of the benchmark.
type Section struct {
	// Name selects the section on the command line (-only).
	Name string
	// Run measures and prints.
	Run func(ctx context.Context, cfg Config) error
}

// Sections returns the sections in run order: the binary IVF alone
// (dense.go), then beside its peers (peers.go), Seismic (seismic.go),
// block-max pruning (bmp.go).
func Sections() []Section {
	return []Section{
		{Name: "dense", Run: runDense},
		{Name: "peers", Run: runPeers},
		{Name: "seismic", Run: runSeismic},
		{Name: "bmp", Run: runBMP},
	}
}
