// Package codec holds the integer codes of a segment's docs sections
// (engine/segment/doc.go, "post"): bit strings LSB-first (BitWriter,
// BitReader) with Elias gamma codes, binary interpolative and gamma-gap
// doc-id lists, patched frame-of-reference blocks (AppendPFor), the
// interpolative full block (AppendInterpBlock), the encoder of a whole
// docs section with its skip table (DocsEncoder) and the bounds-checked
// uvarint read (UvarintAt). It knows nothing of segment files: every
// decoder is bounds-checked against the bytes it is given and reports
// failure, and engine/segment turns that into corruption of its file.
package codec
