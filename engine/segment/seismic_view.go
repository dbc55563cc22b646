package segment

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// hostLittleEndian is true when the machine's byte order is the files',
// so that aligned file bytes can be viewed as words without copying.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// wordView returns the little-endian array of T in b: the bytes themselves
// when the host is little-endian and b is aligned for T (the writer
// aligns the regions read this way), a copy decoded with decode
// otherwise. A partial word at the end of b is left out.
func wordView[T uint32 | uint64 | float32](b []byte, decode func([]byte) T) []T {
	size := int(unsafe.Sizeof(*new(T)))
	n := len(b) / size
	if n == 0 {
		return nil
	}
	if hostLittleEndian && uintptr(unsafe.Pointer(&b[0]))%uintptr(size) == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]T, n)
	for i := range out {
		out[i] = decode(b[size*i:])
	}
	return out
}

// u64View is wordView for uint64 words.
func u64View(b []byte) []uint64 { return wordView(b, binary.LittleEndian.Uint64) }

// u32View is wordView for uint32 words.
func u32View(b []byte) []uint32 { return wordView(b, binary.LittleEndian.Uint32) }

// f32View is wordView for float32 bits.
func f32View(b []byte) []float32 {
	return wordView(b, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
}

// pad4 writes zero bytes until the payload offset is a multiple of 4
// (the header is 24 bytes, so the file offset is too).
func pad4(w *fileWriter) {
	var zero [3]byte
	if r := w.offset() % 4; r != 0 {
		w.write(zero[:4-r])
	}
}
