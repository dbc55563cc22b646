package segment

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// rawPool recycles decompressed block buffers.
var rawPool = sync.Pool{New: func() any { return new([]byte) }}

const (
	// storeBlockTarget is the uncompressed size at which a store block is
	// compressed and a new one started.
	storeBlockTarget = 16 << 10
	// maxRawBlock bounds an uncompressed store block (and so one document).
	maxRawBlock = 256 << 20
	// storeIndexEntry is the size of a block index entry: first doc uint32,
	// payload offset uint64, compressed length uint32, raw length uint32.
	storeIndexEntry = 20
)

// Record field kinds: what a store record holds for a field.
const (
	recNone          byte = 0 // nothing (numbers and dense vectors come from columns)
	recStrings       byte = 1 // text and keyword values of a field that is not stored (version 1 only)
	recStoredStrings byte = 2 // text and keyword values of a stored field
	recSparse        byte = 3 // sparse vector entries
)

// recFromJSON is the record flag saying that the values of recStoredStrings
// fields are not repeated in the record but recovered from the stored JSON.
const recFromJSON = 1

// legacyStoreVersion is the older store format still read: records keep
// the values of text, keyword and sparse vector fields that are not
// stored (recStrings, and recSparse for every sparse field), which only a
// rebuilt document ever read. Merges rewrite such segments in the current
// format, without them.
const legacyStoreVersion = 1

// recordKinds returns the record kind of every schema field in the store
// format version (kindVersion(SuffixStore) or legacyStoreVersion). From
// version 2 on a field that is not stored has no values in the records
// (recNone), except a stored text or keyword field, which is recovered
// from the stored JSON or kept as recStoredStrings, and a stored sparse
// vector field (recSparse).
func recordKinds(s *schema.Schema, version uint32) []byte {
	legacy := version == legacyStoreVersion
	kinds := make([]byte, len(s.Fields))
	for i := range s.Fields {
		f := &s.Fields[i]
		switch f.Type {
		case schema.Text, schema.Keyword:
			switch {
			case f.IsStored():
				kinds[i] = recStoredStrings
			case legacy:
				kinds[i] = recStrings
			}
		case schema.SparseVector:
			if legacy || f.IsStored() {
				kinds[i] = recSparse
			}
		}
	}
	return kinds
}

// storeBlock locates one compressed block.
type storeBlock struct {
	firstDoc uint32
	off      uint64
	compLen  uint32
	rawLen   uint32
}

// storeBuilder encodes document records and compresses them in blocks as
// documents are added.
type storeBuilder struct {
	kinds    []byte
	recs     []byte   // records of the pending block
	lens     []uint32 // record lengths of the pending block
	firstDoc uint32
	numDocs  uint32
	comp     []byte // compressed blocks
	blocks   []storeBlock
	maxRaw   uint32
	scratch  []byte
	err      error
}

// init sets the record layout of the current store format for s.
func (sb *storeBuilder) init(s *schema.Schema) { sb.kinds = recordKinds(s, kindVersion(SuffixStore)) }

func (sb *storeBuilder) memBytes() int64 {
	return int64(cap(sb.comp) + cap(sb.recs) + cap(sb.scratch) + 4*cap(sb.lens) + storeIndexEntry*cap(sb.blocks))
}

// add appends doc's record: a flags byte, uvarint(len(Stored)) Stored,
// then per field of kind recStrings (legacy version only) (and recStoredStrings unless the flags
// say recFromJSON) uvarint(n) n×(uvarint(len) bytes), per field of kind
// recSparse uvarint(n) n×(uvarint(len) dim float32 LE).
func (sb *storeBuilder) add(doc *schema.Document, s *schema.Schema) {
	n := len(sb.recs)
	var flags byte
	if storedHoldsStrings(doc, s, sb.kinds) {
		flags = recFromJSON
	}
	r := append(sb.recs, flags)
	r = binary.AppendUvarint(r, uint64(len(doc.Stored)))
	r = append(r, doc.Stored...)
	for i, k := range sb.kinds {
		var v *schema.Values
		if i < len(doc.Fields) {
			v = &doc.Fields[i]
		}
		switch {
		case k == recNone || (k == recStoredStrings && flags == recFromJSON):
		case v == nil:
			r = append(r, 0)
		case k == recSparse:
			r = binary.AppendUvarint(r, uint64(len(v.Sparse)))
			for _, e := range v.Sparse {
				r = binary.AppendUvarint(r, uint64(len(e.Dim)))
				r = append(r, e.Dim...)
				r = binary.LittleEndian.AppendUint32(r, math.Float32bits(e.Weight))
			}
		default:
			r = binary.AppendUvarint(r, uint64(len(v.Strings)))
			for _, s := range v.Strings {
				r = binary.AppendUvarint(r, uint64(len(s)))
				r = append(r, s...)
			}
		}
	}
	sb.recs = r
	sb.lens = append(sb.lens, uint32(min(len(r)-n, math.MaxUint32)))
	sb.numDocs++
	if len(sb.recs) >= storeBlockTarget {
		sb.flush()
	}
}

// addRecord appends an encoded record as is (merges copy records from a
// segment of the same schema).
func (sb *storeBuilder) addRecord(rec []byte) {
	sb.recs = append(sb.recs, rec...)
	sb.lens = append(sb.lens, uint32(min(len(rec), math.MaxUint32)))
	sb.numDocs++
	if len(sb.recs) >= storeBlockTarget {
		sb.flush()
	}
}

// appendBlock appends a compressed block of count records as is, after
// closing the pending block (merges copy whole blocks of kept rows).
func (sb *storeBuilder) appendBlock(comp []byte, count, rawLen uint32) {
	sb.flush()
	if sb.err != nil {
		return
	}
	sb.blocks = append(sb.blocks, storeBlock{firstDoc: sb.numDocs, off: uint64(len(sb.comp)),
		compLen: uint32(len(comp)), rawLen: rawLen})
	sb.comp = append(sb.comp, comp...)
	sb.maxRaw = max(sb.maxRaw, rawLen)
	sb.numDocs += count
	sb.firstDoc = sb.numDocs
}

// storedHoldsStrings reports whether doc.Stored looks like the JSON that
// schema.ParseDocument builds, so that stored text and keyword values can be
// recovered from it instead of being kept twice: every stored string field
// with values must appear as a key. Hand-built documents failing this keep
// their strings in the record.
func storedHoldsStrings(doc *schema.Document, s *schema.Schema, kinds []byte) bool {
	if len(doc.Stored) < 2 || doc.Stored[0] != '{' {
		return false
	}
	var key [schema.MaxTermBytes]byte
	for i, k := range kinds {
		if k != recStoredStrings || i >= len(doc.Fields) || len(doc.Fields[i].Strings) == 0 {
			continue
		}
		name := s.Fields[i].Name
		if len(name)+3 > len(key) {
			return false
		}
		kb := append(append(append(key[:0], '"'), name...), '"', ':')
		if !bytes.Contains(doc.Stored, kb) {
			return false
		}
	}
	return true
}

// flush compresses the pending block.
func (sb *storeBuilder) flush() {
	if len(sb.lens) == 0 || sb.err != nil {
		return
	}
	raw := binary.AppendUvarint(sb.scratch[:0], uint64(len(sb.lens)))
	for _, l := range sb.lens {
		raw = binary.AppendUvarint(raw, uint64(l))
	}
	raw = append(raw, sb.recs...)
	sb.scratch = raw
	if len(raw) > maxRawBlock {
		sb.err = fmt.Errorf("segment: stored documents %d..%d need %d bytes, at most %d allowed", sb.firstDoc, sb.numDocs-1, len(raw), maxRawBlock)
		return
	}
	off := len(sb.comp)
	sb.comp = slices.Grow(sb.comp, s2.MaxEncodedLen(len(raw)))
	enc := s2.EncodeBetter(sb.comp[off:off+s2.MaxEncodedLen(len(raw))], raw)
	sb.comp = sb.comp[:off+len(enc)]
	sb.blocks = append(sb.blocks, storeBlock{firstDoc: sb.firstDoc, off: uint64(off),
		compLen: uint32(len(sb.comp) - off), rawLen: uint32(len(raw))})
	sb.maxRaw = max(sb.maxRaw, uint32(len(raw)))
	sb.recs, sb.lens = sb.recs[:0], sb.lens[:0]
	sb.firstDoc = sb.numDocs
}

// writeStore writes the store file: the compressed blocks, the block index
// and the directory (numDocs, numBlocks, maxRaw, indexOff, record kinds).
func (sb *storeBuilder) write(w *fileWriter) {
	w.write(sb.comp)
	indexOff := w.offset()
	var e [storeIndexEntry]byte
	for _, b := range sb.blocks {
		binary.LittleEndian.PutUint32(e[0:], b.firstDoc)
		binary.LittleEndian.PutUint64(e[4:], b.off)
		binary.LittleEndian.PutUint32(e[12:], b.compLen)
		binary.LittleEndian.PutUint32(e[16:], b.rawLen)
		w.write(e[:])
	}
	w.beginDirectory()
	w.uvarint(uint64(sb.numDocs))
	w.uvarint(uint64(len(sb.blocks)))
	w.uvarint(uint64(sb.maxRaw))
	w.uvarint(indexOff)
	w.uvarint(uint64(len(sb.kinds)))
	w.write(sb.kinds)
}

// storeReader reads the store file.
type storeReader struct {
	id        segid.ID
	payload   []byte
	index     []byte
	numBlocks uint32
	numDocs   uint32
	maxRaw    uint32
	kinds     []byte
	// cache keeps decoded blocks (nil: none); seq numbers the reader in
	// it (cacheKey).
	cache *Cache
	seq   uint64
}

// openStore reads the directory of a store file of the given format
// version and checks its record layout is the one of s in that version;
// the reader keeps its decoded blocks in cache when it is not nil.
func openStore(id segid.ID, payload []byte, numDocs uint32, s *schema.Schema, version uint32, cache *Cache) (*storeReader, error) {
	kinds := recordKinds(s, version)
	dir, err := splitDirectory(payload, id, SuffixStore)
	if err != nil {
		return nil, err
	}
	d := decoder{b: dir}
	sr := &storeReader{id: id, payload: payload, kinds: kinds, cache: cache}
	if cache != nil {
		sr.seq = cache.nextReader()
	}
	sr.numDocs = d.u32v()
	sr.numBlocks = d.u32v()
	sr.maxRaw = d.u32v()
	indexOff := d.uvarint()
	nk := d.intv(len(dir))
	onDisk := d.bytes(nk)
	d.done()
	if d.err != nil {
		return nil, corruptf(id, SuffixStore, "directory: %v", d.err)
	}
	if sr.numDocs != numDocs {
		return nil, corruptf(id, SuffixStore, "%d documents, segment has %d", sr.numDocs, numDocs)
	}
	if string(onDisk) != string(kinds) {
		return nil, corruptf(id, SuffixStore, "record layout does not match the schema")
	}
	if sr.maxRaw > maxRawBlock || (sr.numBlocks == 0) != (numDocs == 0) || sr.numBlocks > numDocs {
		return nil, corruptf(id, SuffixStore, "%d blocks of at most %d bytes for %d documents", sr.numBlocks, sr.maxRaw, numDocs)
	}
	var ok bool
	if sr.index, ok = subslice(payload, indexOff, uint64(sr.numBlocks)*storeIndexEntry); !ok {
		return nil, corruptf(id, SuffixStore, "block index outside payload")
	}
	return sr, nil
}

// blockInfo returns block b's location and document range [first, end).
func (sr *storeReader) blockInfo(b uint32) (storeBlock, uint32, error) {
	e := sr.index[uint64(b)*storeIndexEntry:]
	blk := storeBlock{firstDoc: binary.LittleEndian.Uint32(e), off: binary.LittleEndian.Uint64(e[4:]),
		compLen: binary.LittleEndian.Uint32(e[12:]), rawLen: binary.LittleEndian.Uint32(e[16:])}
	end := sr.numDocs
	if b+1 < sr.numBlocks {
		end = binary.LittleEndian.Uint32(sr.index[uint64(b+1)*storeIndexEntry:])
	}
	if (b == 0 && blk.firstDoc != 0) || blk.firstDoc >= end || end > sr.numDocs {
		return blk, 0, corruptf(sr.id, SuffixStore, "block %d covers documents [%d,%d) of %d", b, blk.firstDoc, end, sr.numDocs)
	}
	if blk.rawLen > sr.maxRaw || blk.off > uint64(len(sr.payload)) || uint64(blk.compLen) > uint64(len(sr.payload))-blk.off {
		return blk, 0, corruptf(sr.id, SuffixStore, "block %d at [%d,+%d) of raw size %d is out of bounds", b, blk.off, blk.compLen, blk.rawLen)
	}
	return blk, end, nil
}

// decodeBlock decompresses block b into a pooled buffer and returns the
// buffer (to put back in rawPool), its document range and the record
// boundaries (n+1 offsets into raw).
func (sr *storeReader) decodeBlock(b uint32, bounds []int) (*[]byte, uint32, []int, error) {
	blk, end, err := sr.blockInfo(b)
	if err != nil {
		return nil, 0, nil, err
	}
	src := sr.payload[blk.off : blk.off+uint64(blk.compLen)]
	buf := rawPool.Get().(*[]byte)
	if cap(*buf) < int(blk.rawLen) {
		*buf = make([]byte, 0, int(blk.rawLen))
	}
	var raw []byte
	n, err := s2.DecodedLen(src)
	if err == nil && n != int(blk.rawLen) {
		err = fmt.Errorf("decoded length %d", n)
	}
	if err == nil {
		raw, err = s2.Decode((*buf)[:blk.rawLen], src)
	}
	if err != nil || len(raw) != int(blk.rawLen) {
		rawPool.Put(buf)
		return nil, 0, nil, corruptf(sr.id, SuffixStore, "block %d does not decompress to %d bytes (%v)", b, blk.rawLen, err)
	}
	*buf = raw
	d := decoder{b: raw}
	count := d.uvarint()
	if d.err != nil || count != uint64(end-blk.firstDoc) {
		rawPool.Put(buf)
		return nil, 0, nil, corruptf(sr.id, SuffixStore, "block %d holds %d records, want %d", b, count, end-blk.firstDoc)
	}
	lens := d.off
	total := uint64(0)
	for i := uint64(0); i < count && d.err == nil; i++ {
		total += d.uvarint()
	}
	if d.err != nil || total != uint64(d.remaining()) {
		rawPool.Put(buf)
		return nil, 0, nil, corruptf(sr.id, SuffixStore, "block %d record lengths do not add up", b)
	}
	bounds = append(bounds[:0], d.off)
	d.off = lens
	pos := uint64(len(raw)) - total
	for i := uint64(0); i < count; i++ {
		pos += d.uvarint()
		bounds = append(bounds, int(pos))
	}
	return buf, blk.firstDoc, bounds, nil
}

// blockAfter returns one more than the index of the block holding doc
// (its block is b-1), by a binary search of the blocks' first docs.
func (sr *storeReader) blockAfter(doc uint32) (uint32, error) {
	if doc >= sr.numDocs {
		return 0, fmt.Errorf("segment: doc %d out of range (%d documents)", doc, sr.numDocs)
	}
	b := uint32(sort.Search(int(sr.numBlocks), func(i int) bool {
		return binary.LittleEndian.Uint32(sr.index[uint64(i)*storeIndexEntry:]) > doc
	}))
	if b == 0 {
		return 0, corruptf(sr.id, SuffixStore, "no block holds doc %d", doc)
	}
	return b, nil
}

// record returns a copy of doc's record.
func (sr *storeReader) record(doc uint32) ([]byte, error) {
	b, err := sr.blockAfter(doc)
	if err != nil {
		return nil, err
	}
	if e := sr.index[uint64(b-1)*storeIndexEntry:]; sr.cache != nil && binary.LittleEndian.Uint32(e[16:]) <= maxCachedBlock {
		return sr.cachedRecord(b-1, doc)
	}
	var boundsBuf [64]int
	buf, first, bounds, err := sr.decodeBlock(b-1, boundsBuf[:0])
	if err != nil {
		return nil, err
	}
	defer rawPool.Put(buf)
	i := doc - first
	if int(i)+1 >= len(bounds) {
		return nil, corruptf(sr.id, SuffixStore, "block %d does not hold doc %d", b-1, doc)
	}
	return append([]byte(nil), (*buf)[bounds[i]:bounds[i+1]]...), nil
}

// parseRecord decodes a record. When vals is nil only the stored JSON is
// returned; otherwise vals (one per field) receives strings and sparse
// entries.
func (sr *storeReader) parseRecord(rec []byte, vals []schema.Values, s *schema.Schema) ([]byte, error) {
	return sr.decodeRecord(rec, vals, s, false)
}

// checkRecord runs every check of parseRecord with vals but builds no
// values (Validate): no string is copied out of the record.
func (sr *storeReader) checkRecord(rec []byte, s *schema.Schema) ([]byte, error) {
	return sr.decodeRecord(rec, nil, s, true)
}

// decodeRecord is parseRecord, or checkRecord when check is set.
func (sr *storeReader) decodeRecord(rec []byte, vals []schema.Values, s *schema.Schema, check bool) ([]byte, error) {
	d := decoder{b: rec}
	flags := d.u8()
	stored := d.bytes(d.intv(len(rec)))
	if d.err == nil && flags > recFromJSON {
		d.fail("unknown record flags %d", flags)
	}
	if (vals == nil && !check) || d.err != nil {
		if d.err != nil {
			return nil, corruptf(sr.id, SuffixStore, "record: %v", d.err)
		}
		return stored, nil
	}
	for i, k := range sr.kinds {
		switch {
		case k == recNone || (k == recStoredStrings && flags == recFromJSON):
		case k == recSparse:
			n := d.intv(d.remaining() / 5)
			if n > 0 && !check {
				vals[i].Sparse = make([]schema.SparseEntry, n)
			}
			for j := 0; j < n && d.err == nil; j++ {
				dim := d.bytes(d.intv(d.remaining()))
				w := math.Float32frombits(d.u32())
				if !check {
					vals[i].Sparse[j] = schema.SparseEntry{Dim: string(dim), Weight: w}
				}
			}
		default:
			n := d.intv(d.remaining())
			if n > 0 && !check {
				vals[i].Strings = make([]string, n)
			}
			for j := 0; j < n && d.err == nil; j++ {
				v := d.bytes(d.intv(d.remaining()))
				if !check {
					vals[i].Strings[j] = string(v)
				}
			}
		}
	}
	d.done()
	if d.err != nil {
		return nil, corruptf(sr.id, SuffixStore, "record: %v", d.err)
	}
	if flags == recFromJSON {
		if err := stringsFromJSON(stored, vals, s, sr.kinds); err != nil {
			return nil, corruptf(sr.id, SuffixStore, "record: %v", err)
		}
	}
	return stored, nil
}

// stringsFromJSON recovers the values of stored text and keyword fields
// from a stored JSON object, the way schema.ParseDocument read them (with
// vals nil, it only checks that it can). It checks the whole document is
// valid JSON.
func stringsFromJSON(stored []byte, vals []schema.Values, s *schema.Schema, kinds []byte) error {
	raws, ok := scanStoredStrings(stored, s, kinds)
	if !ok {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(stored, &obj); err != nil {
			return fmt.Errorf("stored JSON: %w", err)
		}
		raws = make([][]byte, len(kinds))
		for i, k := range kinds {
			if k == recStoredStrings {
				raws[i] = obj[s.Fields[i].Name]
			}
		}
	}
	for i, k := range kinds {
		if k != recStoredStrings {
			continue
		}
		raw := raws[i]
		if raw == nil || string(raw) == "null" {
			continue
		}
		if vals == nil && raw[0] == '"' {
			// Checked only (checkRecord): the whole document is valid
			// JSON (jsonvalid.Valid above, or the map's Unmarshal), so a
			// value opening with a quote is a JSON string, which the
			// decoding into a string below cannot refuse (it replaces
			// invalid UTF-8): nothing is left to check.
			continue
		}
		if str, ok := plainJSONString(raw); ok {
			vals[i].Strings = []string{str}
			continue
		}
		if len(raw) > 0 && raw[0] == '[' {
			var list []string
			if err := json.Unmarshal(raw, &list); err != nil {
				return fmt.Errorf("field %q: %w", s.Fields[i].Name, err)
			}
			if len(list) > 0 && vals != nil {
				vals[i].Strings = list
			}
			continue
		}
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return fmt.Errorf("field %q: %w", s.Fields[i].Name, err)
		}
		if vals != nil {
			vals[i].Strings = []string{one}
		}
	}
	return nil
}

// convertRecord appends to dst rec, a record of sr's layout, rewritten in
// the layout to, which keeps a subset of sr's fields (a legacy record
// written again in the current format: the values of the fields to says
// recNone are left out). The values are copied as bytes, not decoded.
func (sr *storeReader) convertRecord(dst, rec []byte, to []byte) ([]byte, error) {
	if len(to) != len(sr.kinds) {
		return nil, fmt.Errorf("segment: %s: convert a record of %d fields to %d", sr.id, len(sr.kinds), len(to))
	}
	d := decoder{b: rec}
	flags := d.u8()
	d.bytes(d.intv(len(rec)))
	dst = append(dst, rec[:d.off]...)
	for i, k := range sr.kinds {
		start := d.off
		switch {
		case k == recNone || (k == recStoredStrings && flags == recFromJSON):
		case k == recSparse:
			n := d.intv(d.remaining() / 5)
			for j := 0; j < n && d.err == nil; j++ {
				d.bytes(d.intv(d.remaining()))
				d.u32()
			}
		default:
			n := d.intv(d.remaining())
			for j := 0; j < n && d.err == nil; j++ {
				d.bytes(d.intv(d.remaining()))
			}
		}
		if d.err != nil {
			break
		}
		if to[i] != recNone {
			if to[i] != k {
				return nil, fmt.Errorf("segment: %s: field %d: record kind %d cannot become %d", sr.id, i, k, to[i])
			}
			dst = append(dst, rec[start:d.off]...)
		}
	}
	d.done()
	if d.err != nil {
		return nil, corruptf(sr.id, SuffixStore, "record: %v", d.err)
	}
	return dst, nil
}
