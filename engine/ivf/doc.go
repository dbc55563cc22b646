// Package ivf is binary IVF: dense vectors reduced to sign bits, packed in
// 64-bit words, grouped by a coarse k-majority clustering of those codes
// and searched by Hamming distance (math/bits.OnesCount64) over the
// nprobe clusters nearest to the query.
//
// A Run is one encoding: a centroid model (K packed centroids, identified
// by Model.Hash) and the codes and document IDs of its vectors, stored
// contiguously cluster by cluster. Runs are immutable once built: a merge
// concatenates runs with their document IDs rebased (Run.Remap), never
// re-encoding them; maintenance coalesces a segment's runs by encoding the
// vectors again into one run with a freshly trained model.
//
// The package knows nothing of files; engine/segment frames runs in the
// ivf file kind.
package ivf
