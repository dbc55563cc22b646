package codec

import "encoding/binary"

// UvarintAt decodes a uvarint at b[off:] with a one-byte fast path and
// returns the value and the next offset, or ok=false when malformed.
func UvarintAt(b []byte, off int) (uint64, int, bool) {
	if off < len(b) && b[off] < 0x80 {
		return uint64(b[off]), off + 1, true
	}
	if off >= len(b) {
		return 0, off, false
	}
	x, k := binary.Uvarint(b[off:])
	if k <= 0 {
		return 0, off, false
	}
	return x, off + k, true
}
