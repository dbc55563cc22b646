// Package seismic holds the clustering of a Seismic index (Bruch, Nardini,
// Rulli, Venturini, SIGIR 2024): a dimension's list cut to its λ heaviest
// postings, split into blocks by a shallow k-means over the documents'
// vectors, each block with a quantized summary (Clusterer.Place). It
// knows nothing of segment files: engine/segment builds the lists and the
// forward index, and encodes, reads, merges and validates the blocks
// (seismic_build.go, seismic_file.go and their neighbours there).
package seismic
