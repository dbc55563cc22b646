package bp

import (
	"context"
	"testing"
)

// BenchmarkReorder runs one full pass over the real-text graph and
// reports documents per second.
func BenchmarkReorder(b *testing.B) {
	g := realGraph(b)
	for _, w := range []int{1, 2} {
		b.Run(map[int]string{1: "workers=1", 2: "workers=2"}[w], func(b *testing.B) {
			for b.Loop() {
				if _, err := Reorder(context.Background(), g, nil, Budget{Workers: w}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(g.NumDocs())*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}
