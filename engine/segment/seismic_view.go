package segment

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// littleEndianHost is true when the machine's byte order is the files'.
var littleEndianHost = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// u32view returns the little-endian uint32 array in b as a []uint32: the
// bytes themselves when the host is little-endian and b is aligned (the
// writer aligns Seismic regions), a decoded copy otherwise. len(b) must be
// a multiple of 4 (the callers' region sizes are).
func u32view(b []byte) []uint32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if littleEndianHost && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// f32view is u32view for float32 bits.
func f32view(b []byte) []float32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if littleEndianHost && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// pad4 writes zero bytes until the payload offset is a multiple of 4
// (the header is 24 bytes, so the file offset is too).
func pad4(w *fileWriter) {
	var zero [3]byte
	if r := w.offset() % 4; r != 0 {
		w.write(zero[:4-r])
	}
}
