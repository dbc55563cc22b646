// Package segment writes and reads immutable index segments.
//
// A segment is one compound file seg_<ID>.cmp in an index directory,
// written once by a Builder and read by a Reader: its parts (post, terms,
// norms, ...; the sections below) back to back, each framed exactly as a
// file of its own, listed with their sizes in Info.Parts (compound.go).
// Segments written before the compound file are the set of files
// seg_<ID>.<suffix>, one per part, and stay readable. Files over 32 KiB
// (16 KiB for a part file) are memory-mapped when the file system has
// file descriptors, smaller ones read into memory; decompressed
// stored-field blocks are shared through a small process-wide cache. A
// deletion-mask generation is a separate file seg_<MASKID>.del with its
// own ID (WriteMask, ReadMask).
// Ownership, publication and cleanup of these files belong to the index.
//
// # Framing (file.go)
//
// Every part (and every file of the older layout, and every mask) is
//
//	header  "SUMMASEG" | kind [4]byte | format version uint32 | segment ID uint64   (24 bytes)
//	payload file-kind specific
//	footer  payload length uint64 | CRC32-C of header+payload uint32 | "SUMMAEND" (20 bytes)
//
// All fixed-width integers are little-endian; "uvarint" is
// encoding/binary's unsigned varint. Every payload ends with a uint64
// giving the offset of the payload's directory, which runs from there to
// those last 8 bytes. Offsets are relative to the payload start. Every
// directory starts with the document count, and Open checks it against the
// metadata's count; directories list fields by schema ordinal in increasing
// order and Open checks that the listed fields are exactly those the
// schema calls for.
//
// Open performs the cheap check (sizes, headers, footers, directories) of
// every part, so that a damaged segment is quarantined as soon as its
// index opens; Validate recomputes every CRC and decodes every structure.
// OpenValidated does the same for a segment written without its fsync
// (a rewrite's output): it syncs the file while it checks the structures,
// then opens the segment again and recomputes the CRCs on the bytes the
// sync made durable.
//
// # terms (kind "term")
//
// One term dictionary per indexed text, keyword and numeric field (numbers
// are indexed by their canonical text, schema.Field.ExactTerms). Terms are
// sorted bytewise; a term's ordinal is its position in that order. Terms
// are grouped in blocks of 32: each entry is uvarint(shared prefix length
// with the previous term, 0 for a block's first), uvarint(suffix length),
// suffix, uvarint(docFreq), uvarint(docs section length) and, for
// tokenized fields, uvarint(positions section length). After a field's
// blocks comes its block index: per block the block's offset within the
// field's blocks and the postings offset of its first term within the
// field's postings region (uint64 each), so that a lookup binary-searches
// the blocks' first terms and scans one block; later terms' postings
// offsets are the running sum of section lengths. Directory: numDocs,
// nFields, per field: ordinal, numTerms, blockSize, hasPositions byte,
// blocks offset and length, block index offset, postings region offset and
// length in the post payload, sum of docFreqs.
//
// # post (kind "post", format version 2)
//
// Per indexed field, per term in dictionary order: the docs section then
// the positions section. The docs section codes the term's df documents
// in blocks of 128 (the last block, the tail, holds df mod 128 when that
// is not 0): a skip table when there are two blocks or more, the full
// blocks, then the tail (codec/docs.go, skip.go).
//
// The skip table is three bytes of bit widths bd, bo, bc, then, per block
// but the last, three bit-packed columns (LSB-first, each entry at a fixed
// width, so entry i is read directly): the block's last doc id (bd bits),
// the offset of the next block from the end of the table (bo bits), and,
// for fields with positions, the sum of the frequencies up to the block's
// end (bc bits, 0 otherwise), padded to a byte. Postings.Advance
// binary-searches the last doc ids and jumps whole blocks without decoding
// them; the frequency sum says how many positions to skip. A block read
// in order is checked against its entry, so Validate checks every entry.
//
// A full block is its 128 doc ids, then its 128 frequencies minus one as a
// packed block. The doc ids are either a packed block of the gaps
// g = doc - previous doc - 1 (the previous doc of the first document being
// -1), or, when that is at least a quarter shorter, the byte 0xFF then a
// bit string: gamma(last - previous doc - 127) for the block's last doc,
// then the other 127 in binary interpolative code (Moffat and Stuiver)
// within [previous doc + 1, last - 1], padded to a byte. A packed block
// (patched frame of reference, codec/pfor.go) is: u8 bit width b (0..32), u8
// exception count e (< number of values), the low b bits of every value
// packed LSB-first into ceil(values*b/8) bytes, then e exceptions, each u8
// index and uvarint(value >> b) (non-zero, distinct indexes); b is chosen
// to make the block smallest.
//
// The tail is one bit string padded to a byte: its doc ids within
// [previous doc + 1, numDocs - 1], then each frequency in Elias gamma code
// (bits.Len(f)-1 zero bits, a one bit, the bits of f below its highest).
// A single doc id is coded in interpolative code (a fixed width offset);
// two or more start with a selector bit: 0 for the interpolative code, 1
// for the first doc as a fixed-width offset then each gap (>= 1) in gamma
// code, whichever the encoder found shorter (codec/bitio.go).
//
// Interpolative code of n docs within [lo, hi]: the middle one (index n/2)
// as v - (lo + n/2) in bits.Len(hi - (n-1-n/2) - (lo + n/2)) bits (none
// when its range is one value), then the left half within [lo, v-1] and
// the right half within [v+1, hi]. Runs of consecutive documents cost no
// bits, so the clusters BP creates cost fewer bits than packed gaps do.
// Reader.DocSectionBytes reports the doc-id and frequency shares of the
// docs sections (the skip table, the doc-id blocks and a tail's doc-id
// bits rounded up to bytes count as doc ids).
//
// Positions section (tokenized text only), per document freq uvarints:
// first position, then gaps (>= 1). Non-phrase queries never touch the
// positions section; Postings skips it lazily. Values of a multi-valued
// text field are positioned 100 apart so phrases do not span values.
// Directory: numDocs, nFields, per field: ordinal, region offset and
// length (regions are contiguous and cover the payload).
//
// Version 1 post files (docs sections of uvarint(delta<<1 | freqIsOne)
// per document, then uvarint(freq) when freqIsOne is 0; delta is the first
// doc id, then the gap >= 1) are still read and validated, so existing
// indexes open; any merge, compaction or reorder rewrites them in version 2
// (testdata/v1 and TestReadsVersion1Postings).
//
// # norms (kind "norm")
//
// Per tokenized indexed field, numDocs field lengths (number of terms
// indexed) at a fixed width of 1, 2 or 4 bytes chosen from the largest.
// Directory: numDocs, nFields, per field: ordinal, width, offset.
//
// # store (kind "stor")
//
// Per-document records in S2-compressed blocks (klauspost/compress/s2, block format) of about 16 KiB. A raw
// block is uvarint(count), count uvarint record lengths, then the records.
// A record is a flags byte, uvarint(len) + the stored JSON object
// (schema.Document.Stored, returned as is by StoredDocument), then the
// values that let Document rebuild the stored part of the document: per
// stored text or keyword field uvarint(n) + n × (uvarint(len) + bytes) —
// omitted when flag 1 says they are recovered from the JSON — and per
// stored sparse vector field uvarint(n) + n × (uvarint(len) + dim +
// float32). Numbers, dense vectors and the primary key come from their
// columns. After the blocks: the block index, 20 bytes per block (first
// doc uint32, offset uint64, compressed length uint32, raw length uint32).
// Directory: numDocs, numBlocks, largest raw block, index offset,
// per-field record kinds (recordKinds). Format version 2; version 1 files
// (still read, rewritten by merges) also hold the values of every text,
// keyword and sparse vector field that is not stored.
//
// # pk (kind "pkey")
//
// The primary key of every document in doc id order: key bytes, then an
// offset table of numDocs+1 entries (4 or 8 bytes each). Directory:
// numDocs, hasPK byte, offset width, table offset, key bytes length.
// Schemas without a primary field write the directory only (hasPK 0).
// PrimaryKeyDocs uses the primary field's postings.
//
// # num (kind "nums")
//
// Per u64/i64/f64 field, the values as raw 8-byte words in doc order (i64
// two's complement, f64 IEEE bits), then, unless every document has
// exactly one value, a table of numDocs+1 cumulative value counts.
// Directory: numDocs, nFields, per field: ordinal, table width (0 = one
// value per document, no table), table offset, values offset, value count.
//
// # fwd (kind "fwdl")
//
// Per indexed field with Reorder, per document the sorted distinct term
// ordinals of that field (first absolute, then gaps, uvarint), then an
// offset table of numDocs+1 entries. Directory: numDocs, nFields, per
// field: ordinal, width, table offset, data offset, data length, numTerms.
//
// # vec (kind "vecs")
//
// Dense vector fields: a presence mode (none, all, or a numDocs-bit bitmap
// of uint64 words) and the present vectors, dims float32 each, in doc
// order; a document's vector is found by ranking its bit. Sparse vector
// fields: an inverted map, one postings list per dimension (per document
// uvarint doc id or gap, float32 weight) followed by a dictionary of
// dimensions in the terms format (no positions). Directory: numDocs,
// nDense, per dense field: ordinal, dims, mode, bitmap offset, count,
// values offset; nSparse, per sparse field: ordinal and dictionary entry.
//
// # ivf (kind "ivfb")
//
// Written only for schemas with a dense vector field declared "binary":
// true (engine/ivf). Per such field, a list of encoded runs; a run is a
// centroid model and the sign codes (bit i set when component i > 0,
// quantizer 1) of some of the field's vectors, grouped by nearest
// centroid (k-majority clustering in Hamming space). A fresh segment has
// one run (trained from 2048 vectors on, flat K=1 below); a merge
// concatenates its sources' runs with rebased doc ids; coalescing
// maintenance encodes one run again. Per run, 8-byte aligned: K × words
// uint64 centroids, K+1 uint32 cluster offsets (0 .. count, zero-padded
// to 8 bytes), count × words uint64 codes in cluster order, count uint32
// doc ids (increasing within a cluster, zero-padded). Directory: numDocs,
// nFields, per field: ordinal, words (ceil(dims/64)), nRuns, per run:
// quantizer, K, count, model hash (uint64 LE, FNV-64a of quantizer, K,
// words and the centroid words), then the offsets of the centroids,
// cluster offsets, codes and doc ids. Open checks the shapes, bounds,
// alignment, offsets, model hashes, that the runs hold as many vectors as
// the vec file, and that the segment's metadata entry (Info.IVF: runs,
// vectors, model hashes, fragmentation bit = more than one run) agrees;
// Validate checks that every document with a vector is encoded exactly
// once, with its vector's sign code, in the cluster of a nearest
// centroid. A segment listing no ivf file (written before it) is
// searched exactly.
//
// # seis (kind "seis")
//
// The Seismic index (Bruch, Nardini, Rulli, Venturini, SIGIR 2024) of every
// sparse vector field, eight regions of fixed-width little-endian arrays
// per field. Dimensions are the vec dictionary's ordinals. Per dimension
// 12 bytes: first block uint32, block count uint32, flags uint32 (bit 0:
// pending, its postings are not placed: Seismic debt, scored from the vec
// postings at query time). Per block 20 bytes: summary offset and length
// (entries), doc offset and length (entries), scale float32. A dimension's
// blocks partition its top-λ postings by impact, clustered by a shallow
// k-means over the documents' vectors; a block's summary is the
// coordinate-wise maximum of its documents' vectors cropped to α of its
// mass, as increasing dimension ordinals (uint32) and u8 values (value =
// q × scale, rounded up). Then the blocks' doc ids (uint32, increasing
// within a block), and the forward index: numDocs+1 uint32 offsets, each
// document's dimension ordinals (uint32, increasing) and weights
// (float32). Directory: numDocs, nFields, per sparse field: ordinal,
// numDims, nBlocks, summary entries, doc entries, forward entries,
// pending dimensions, the eight region offsets. Open checks the regions'
// sizes and that numDims and the forward entries match the vec
// dictionary; Validate checks the forward index against the vec postings
// (same entries, same order), block contiguity, increasing in-range ids,
// that each block doc has its dimension, finite scales and the pending
// count. Merges copy placed blocks (encoded runs) with remapped doc ids
// and summary dimensions (SeismicCarry, the merge's seis step). The file
// is optional for segments written before it existed: they open without
// Seismic index.
//
// # rowstats (kind "rows")
//
// Directory only: numDocs, nFields (all schema fields), per field: total
// length (sum of term frequencies), number of documents with at least one
// term, number of distinct terms. Open cross-checks the term counts with
// the dictionaries, Validate the rest with the postings and norms.
//
// # bmp (kind "bmax")
//
// Block maxima for block-max pruning (see blockmax.go for why these
// bounds). Documents are cut into blocks of 2^BlockShift (64) doc ids. Per
// indexed field with a dictionary and per sparse vector field, per term
// (dimension) in dictionary order, a record: for sparse fields first the
// dimension's largest absolute weight (float32); then uvarint(number of
// blocks holding the term), uvarint(entries length), for a text or exact
// term of at least 16 blocks uvarint(superblock table length) and the
// table (blockmax_super.go; length 0 and no table unless the blocks fill
// 4 per group on average), then the entries, the data.
// An entry is uvarint(block number, then gap >= 1), the bound bytes, a
// byte count-1 of the term's documents in the block, uvarint(data length).
// Bound bytes: text fields a frequency code (the block's largest tf, 255 =
// "255 or more") and, tokenized fields only, a ratio code (the smallest
// field length / tf on a log scale 2^((c-1)/16), rounded down; 0 = none)
// and a mix code (blockmax_mix.go);
// sparse fields the largest and smallest weight as int8 levels of
// scale/127, rounded outwards. A block's data is count bytes of doc
// offsets within the block (increasing), then count uvarint frequencies or
// float32 weights: a copy of the postings cut by block, so a block is
// scored without reading the rest of the list. After a field's records,
// an offset table of numTerms+1 offsets (record starts, then the end),
// each 4 bytes when the field's records end below 4 GiB, else 8.
// Directory: numDocs, BlockShift, nFields, per field: ordinal, kind byte
// (1 exact, 2 tokenized, 3 sparse), numTerms, records offset, records
// length, table offset, offset width byte (4 or 8), and for a tokenized
// field its mix reference (two float64). A superblock table groups the
// term's blocks by 16 consecutive block numbers: per group
// uvarint(group number, then gap >= 1), bound bytes that bound each of
// its blocks', a byte of the group's first block within it (high four
// bits) and its block count - 1 (low four bits), uvarint(its entries'
// length), uvarint(its data's length). That is
// format version 4 of the file; versions 1 (offsets always uint64, no
// width byte), 2 (no mix codes) and 3 (no superblock tables) are still
// read and validated, and a merge or reorder rewrites them
// (TestReadsVersion1BlockMax, TestReadsVersion3BlockMax). Open checks the directory against the schema and
// the dictionaries; Validate compares every record byte for byte with the
// one the postings and norms give (text records walked without being
// encoded, matchTextRecord). It is the one optional data file: segments
// written before it existed have none (Reader.HasBlockMax), are searched
// exhaustively, and get one when a merge or reorder rewrites them.
//
// # del (kind "dmsk")
//
// A deletion-mask generation: the portable roaring serialization of the
// deleted doc ids, then the directory: numDocs of the data segment,
// cardinality, bitmap length. ReadMask always checks the CRC and that
// every id is below numDocs.
//
// # Merging (merge.go)
//
// Merge writes a segment from rows of open segments of the same schema,
// given as the output's rows in order (DocRef: source and doc id): a
// merge concatenates the sources (Concat), a compaction drops deleted
// rows, a reorder permutes one source. Nothing is re-tokenized: each file
// kind has a merge step (fileMerges) that fills the Builder's accumulators
// from the sources, then the Builder writes the files as usual, so the
// output is byte for byte what re-indexing the same rows' input documents
// would write, except the store's block boundaries. Term dictionaries are merged
// k-way, a big field in term ranges of about equal cost (postings bytes
// plus a per-term cost, read from every source's block index: splitDicts)
// merged concurrently; postings are re-coded with rebased doc ids (sorted
// when the order is not a concatenation), positions copied as encoded (a
// term's whole section from a source whose every row is kept in order);
// block-max records are encoded as the postings are; norms and row
// statistics are the sums of the merged frequencies; forward lists are
// mapped through the source-to-output ordinal maps (increasing, so they
// stay sorted) while Write writes the parts before theirs; store blocks
// whose rows are all kept in order are copied
// compressed, other rows record by record (a version 1 source's records
// rewritten without the values of unstored fields); columns and dense vectors are
// copied row by row; sparse dimensions are merged like terms. A new file
// kind adds its step to fileMerges (an encoded-run kind can append its
// runs with doc ids rebased through merger.newID instead of re-encoding).
//
// # Robustness
//
// Decoders never trust lengths, offsets or varints: every access is
// bounds-checked (bit strings through codec.BitReader) and bad bytes yield a
// *CorruptionError. Allocation sizes
// derived from file contents are bounded by the bytes that back them.
package segment
