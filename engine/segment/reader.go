package segment

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"golang.org/x/sys/unix"
)

// Reader reads one open segment. Its methods are safe for concurrent use;
// iterators it returns are not. Neither a Reader nor its live iterators
// (Postings, SparsePostings, TermIterator) may be used after Close: their
// bytes may be unmapped. Values returned (strings, slices) are copies.
type Reader struct {
	info    Info
	schema  *schema.Schema
	id      segid.ID
	numDocs uint32
	// files holds every part's bytes, in the order of Info's parts.
	files []loadedFile
	post  []byte
	dicts []*dict
	norms []normCol
	// store, pk, nums and fwds are the row parts (rows.go).
	store  *storeReader
	pk     pkCol
	nums   []numCol
	fwds   []fwdCol
	dense  []*denseCol
	sparse []*dict
	seis   []*SeismicIndex
	stats  []fieldStat
	bmax   []*bmField
	ivf    [][]*ivf.Run // per field: binary IVF runs; nil without an ivf file
	// container is the compound file whose bytes files' parts slice;
	// empty for a segment of separate files.
	container loadedFile
	// cache is ReaderOptions.Cache.
	cache *Cache

	closeOnce sync.Once
	closeErr  error
}

// loadedFile is one file's bytes, memory-mapped or read into memory.
type loadedFile struct {
	// suffix names the part.
	suffix  string
	data    []byte
	payload []byte
	mapped  bool
}

// loadFile opens segment id's file suffix in dir, checks its size and
// maps (or reads) it.
func loadFile(fs vfs.FS, dir string, id segid.ID, suffix string, size int64) (loadedFile, error) {
	return loadFileLimit(fs, dir, id, suffix, size, readLimit)
}

// openFile opens a segment file; a missing one is ErrMissingFile.
func openFile(fs vfs.FS, path string) (vfs.File, error) {
	f, err := fs.Open(path)
	if err != nil {
		if isNotExist(err) {
			return nil, fmt.Errorf("segment: open %s: %w", path, ErrMissingFile)
		}
		return nil, fmt.Errorf("segment: open %s: %w", path, err)
	}
	return f, nil
}

// loadFileLimit is loadFile reading files up to limit bytes into memory
// and mapping larger ones.
func loadFileLimit(fs vfs.FS, dir string, id segid.ID, suffix string, size, limit int64) (loadedFile, error) {
	if isDefaultFS(fs) {
		return loadFileRaw(rawPath(dir, id, suffix), size, id, suffix, limit)
	}
	path := fs.PathJoin(dir, segid.FileName(id, suffix))
	f, err := openFile(fs, path)
	if err != nil {
		return loadedFile{}, err
	}
	defer f.Close()
	if size <= limit {
		return readSmall(f, path, size, id, suffix)
	}
	st, err := f.Stat()
	if err != nil {
		return loadedFile{}, fmt.Errorf("segment: stat %s: %w", path, err)
	}
	if st.Size() != size {
		return loadedFile{}, corruptf(id, suffix, "file has %d bytes, metadata records %d", st.Size(), size)
	}
	if size < frameSize {
		return loadedFile{}, corruptf(id, suffix, "file of %d bytes is shorter than its framing", size)
	}
	if fd := f.Fd(); fd != vfs.InvalidFd {
		data, err := unix.Mmap(int(fd), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
		if err == nil {
			return loadedFile{suffix: suffix, data: data, mapped: true}, nil
		}
	}
	data := make([]byte, size)
	if n, err := f.ReadAt(data, 0); n != len(data) && err != nil && err != io.EOF {
		return loadedFile{}, fmt.Errorf("segment: read %s: %w", path, err)
	} else if n != len(data) {
		return loadedFile{}, corruptf(id, suffix, "read %d of %d bytes", n, size)
	}
	return loadedFile{suffix: suffix, data: data}, nil
}

func (lf *loadedFile) release() error {
	if lf.mapped {
		lf.mapped = false
		return unix.Munmap(lf.data)
	}
	return nil
}

// Open opens a segment with the cheap check only: every file of info
// exists, has the recorded size, a valid header for the segment id and a
// valid footer, and every file's directory agrees with the schema and the
// document count. CRCs are not checked (see Validate). opts, at most one,
// tune the reader (without: no cache).
func Open(fs vfs.FS, dir string, s *schema.Schema, info Info, opts ...ReaderOptions) (*Reader, error) {
	return openWith(fs, dir, s, info, nil, oneOption(opts))
}

// openWith is Open; a compound segment's file is taken from compound
// when it is not nil (its bytes as read by the caller) instead of loaded.
func openWith(fs vfs.FS, dir string, s *schema.Schema, info Info, compound []byte, opts ReaderOptions) (*Reader, error) {
	r := &Reader{info: info, schema: s, id: info.ID, numDocs: info.Documents, cache: opts.Cache}
	r.container.data = compound
	r.info.Files = append([]FileInfo(nil), info.Files...)
	r.info.Parts = append([]FileInfo(nil), info.Parts...)
	if err := r.load(fs, dir, opts.DroppedPages); err != nil {
		r.release()
		return nil, err
	}
	if err := r.parse(); err != nil {
		r.release()
		return nil, err
	}
	if opts.DroppedPages {
		r.adviseMapped(unix.MADV_NORMAL)
	}
	return r, nil
}

// adviseMapped gives advice (madvise) for every mapped file of the
// reader; advice is only a hint, so a failure changes nothing.
func (r *Reader) adviseMapped(advice int) {
	if r.container.mapped {
		_ = unix.Madvise(r.container.data, advice)
	}
	for i := range r.files {
		if r.files[i].mapped {
			_ = unix.Madvise(r.files[i].data, advice)
		}
	}
}

// load loads the segment's files and checks their framing; with
// touchedOnly (ReaderOptions.DroppedPages) the mappings read only the
// pages touched until openWith advises them back.
func (r *Reader) load(fs vfs.FS, dir string, touchedOnly bool) error {
	parts := r.info.parts()
	// A dozen parts at most: scans, not maps (an index of many small
	// segments spent a good share of Open allocating maps).
	listed := func(suffix string, in []FileInfo) bool {
		for _, fi := range in {
			if fi.Suffix == suffix {
				return true
			}
		}
		return false
	}
	for i, fi := range parts {
		if listed(fi.Suffix, parts[:i]) {
			return corruptf(r.id, fi.Suffix, "listed twice in segment metadata")
		}
	}
	for _, suffix := range dataSuffixes {
		// Segments written before the seis file existed have none: they
		// open without Seismic indexes (queries scan them exhaustively,
		// merges place their dimensions). The same holds for the bmp file
		// (see HasBlockMax).
		if !listed(suffix, parts) && suffix != SuffixSeismic && suffix != SuffixBlockMax {
			return corruptf(r.id, suffix, "not listed in segment metadata")
		}
	}
	r.files = make([]loadedFile, 0, len(parts))
	if r.info.Compound() {
		if err := r.loadCompound(fs, dir); err != nil {
			return err
		}
	} else {
		for _, fi := range parts {
			lf, err := loadFile(fs, dir, r.id, fi.Suffix, fi.Size)
			if err != nil {
				return err
			}
			r.files = append(r.files, lf)
		}
	}
	if touchedOnly {
		r.adviseMapped(unix.MADV_RANDOM) // before the first page is read
	}
	for i := range r.files {
		lf := &r.files[i]
		var err error
		if lf.payload, err = checkFrame(lf.data, r.id, lf.suffix, fileKinds[lf.suffix]); err != nil {
			return err
		}
	}
	return nil
}

// parse reads the directory of every file.
func (r *Reader) parse() error {
	s, id, n := r.schema, r.id, r.numDocs
	var err error
	if err = r.parseTerms(); err != nil {
		return err
	}
	if r.norms, err = openNorms(id, s, r.file(SuffixNorms).payload, n); err != nil {
		return err
	}
	if err = r.parseRows(); err != nil {
		return err
	}
	if r.dense, r.sparse, err = openVectors(id, s, r.file(SuffixVectors).payload, n); err != nil {
		return err
	}
	if r.file(SuffixSeismic) == nil {
		r.seis = make([]*SeismicIndex, len(s.Fields))
	} else if r.seis, err = openSeismic(id, s, r.file(SuffixSeismic).payload, n, r.sparse); err != nil {
		return err
	}
	if r.stats, err = openRowStats(id, s, r.file(SuffixRowStats).payload, n); err != nil {
		return err
	}
	if f := r.file(SuffixBlockMax); f != nil {
		if r.bmax, err = openBlockMax(id, s, f.payload, fileVersion(f.data), n, r.dicts, r.sparse); err != nil {
			return err
		}
	}
	if f := r.file(SuffixIVF); f != nil {
		if r.ivf, err = openIVF(id, s, f.payload, n, r.dense); err != nil {
			return err
		}
		if err = r.checkIVFInfo(); err != nil {
			return err
		}
	} else if len(r.info.IVF) > 0 {
		return corruptf(id, SuffixIVF, "segment metadata records runs but lists no ivf file")
	}
	for i := range s.Fields {
		var terms uint32
		if r.dicts[i] != nil {
			terms = r.dicts[i].numTerms
		}
		if r.stats[i].numTerms != terms {
			return corruptf(id, SuffixRowStats, "field %d: %d terms, dictionary has %d", i, r.stats[i].numTerms, terms)
		}
	}
	return nil
}

// parseTerms reads the post and terms directories and opens dictionaries.
func (r *Reader) parseTerms() error {
	s, id := r.schema, r.id
	want := func(i int) bool { return hasDict(&s.Fields[i]) }
	post := r.file(SuffixPostings).payload
	regions := make([]postRegion, len(s.Fields))
	var next uint64
	err := fieldSet(id, SuffixPostings, post, r.numDocs, want, len(s.Fields), func(d *decoder, ord int) error {
		regions[ord] = postRegion{off: d.uvarint(), len: d.uvarint()}
		if d.err == nil && regions[ord].off != next {
			return corruptf(id, SuffixPostings, "field %d postings start at %d, want %d", ord, regions[ord].off, next)
		}
		next += regions[ord].len
		return nil
	})
	if err != nil {
		return err
	}
	dirOff := binary.LittleEndian.Uint64(post[len(post)-8:])
	if next != dirOff {
		return corruptf(id, SuffixPostings, "field postings cover %d bytes, payload holds %d", next, dirOff)
	}
	r.post = post[:dirOff]
	terms := r.file(SuffixTerms).payload
	r.dicts = make([]*dict, len(s.Fields))
	return fieldSet(id, SuffixTerms, terms, r.numDocs, want, len(s.Fields), func(d *decoder, ord int) error {
		m := decodeDictMeta(d)
		if d.err != nil {
			return nil
		}
		if m.hasPos != s.Fields[ord].IsTokenized() {
			return corruptf(id, SuffixTerms, "field %d: positions flag does not match the schema", ord)
		}
		if m.postOff != regions[ord].off || m.postLen != regions[ord].len {
			return corruptf(id, SuffixTerms, "field %d: postings region disagrees with the post file", ord)
		}
		dc, err := openDict(m, terms, r.post, r.numDocs, id, SuffixTerms, SuffixPostings)
		if dc != nil {
			dc.legacyDocs = fileVersion(r.file(SuffixPostings).data) == legacyPostVersion
		}
		r.dicts[ord] = dc
		return err
	})
}

// file returns the part named suffix, or nil.
func (r *Reader) file(suffix string) *loadedFile {
	for i := range r.files {
		if r.files[i].suffix == suffix {
			return &r.files[i]
		}
	}
	return nil
}

func (r *Reader) release() error {
	var first error
	for i := range r.files {
		if err := r.files[i].release(); err != nil && first == nil {
			first = fmt.Errorf("segment: unmap segment %s: %w", r.id, err)
		}
	}
	if err := r.container.release(); err != nil && first == nil {
		first = fmt.Errorf("segment: unmap segment %s: %w", r.id, err)
	}
	return first
}

// ID returns the segment's ID.
func (r *Reader) ID() segid.ID { return r.id }

// Info returns the segment's Info.
func (r *Reader) Info() Info { return r.info }

// NumDocs returns the number of documents (deleted ones included).
func (r *Reader) NumDocs() uint32 { return r.numDocs }

// Close releases the segment's memory maps. Calling it again is a no-op.
func (r *Reader) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.release() })
	return r.closeErr
}

// PostingsBytes returns the size of the post file's payload.
func (r *Reader) PostingsBytes() int64 { return int64(len(r.file(SuffixPostings).payload)) }

func (r *Reader) fieldOK(field int) bool { return field >= 0 && field < len(r.schema.Fields) }

// FieldStats returns a field's total length in terms over all documents and
// the number of documents with at least one term in it (zeros for fields
// without terms).
func (r *Reader) FieldStats(field int) (totalLength uint64, docsWithField uint32) {
	if !r.fieldOK(field) {
		return 0, 0
	}
	return r.stats[field].totalLen, r.stats[field].docsWith
}

// FieldLength returns a tokenized field's length in terms in doc, or 0.
func (r *Reader) FieldLength(field int, doc uint32) uint32 {
	if !r.fieldOK(field) || doc >= r.numDocs {
		return 0
	}
	return r.norms[field].at(doc)
}

// NumTerms returns the number of distinct terms of a field.
func (r *Reader) NumTerms(field int) uint32 {
	if !r.fieldOK(field) || r.dicts[field] == nil {
		return 0
	}
	return r.dicts[field].numTerms
}

func (r *Reader) dict(field int) (*dict, error) {
	if !r.fieldOK(field) {
		return nil, fmt.Errorf("segment: no field %d", field)
	}
	if r.dicts[field] == nil {
		return nil, fmt.Errorf("segment: field %q has no terms", r.schema.Fields[field].Name)
	}
	return r.dicts[field], nil
}

// Postings returns the postings of term in field, or nil, nil when the
// term is absent.
func (r *Reader) Postings(field int, term string) (*Postings, error) {
	d, err := r.dict(field)
	if err != nil {
		return nil, err
	}
	e, ok, err := d.lookup(term)
	if err != nil || !ok {
		return nil, err
	}
	return d.postings(e), nil
}

// Terms returns an iterator over a field's terms in sorted order.
func (r *Reader) Terms(field int) (*TermIterator, error) {
	d, err := r.dict(field)
	if err != nil {
		return nil, err
	}
	return &TermIterator{d: d}, nil
}

// TermAt returns the term of a field with the given ordinal.
func (r *Reader) TermAt(field int, ord uint32) (string, error) {
	d, err := r.dict(field)
	if err != nil {
		return "", err
	}
	if ord >= d.numTerms {
		return "", fmt.Errorf("segment: term ordinal %d out of %d", ord, d.numTerms)
	}
	var c blockCursor
	if err := c.reset(d, ord/d.blockSize); err != nil {
		return "", err
	}
	var term []byte
	for {
		var ok bool
		term, ok, err = c.next(term)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", corruptf(r.id, SuffixTerms, "dictionary block misses ordinal %d", ord)
		}
		if c.e.ord == ord {
			return string(term), nil
		}
	}
}

// PrimaryKeyDocs returns the doc ids holding primary key pk (normally at
// most one; more while an upsert's older copy awaits its deletion mask).
// pk must be canonical text (schema.Field.NormalizeExactTerm for numbers).
func (r *Reader) PrimaryKeyDocs(pk string) ([]uint32, error) {
	p := r.schema.Primary()
	if p < 0 {
		return nil, fmt.Errorf("segment: primary key lookup: %w", schema.ErrNoPrimaryKey)
	}
	it, err := r.Postings(p, pk)
	if err != nil || it == nil {
		return nil, err
	}
	var docs []uint32
	for it.Next() {
		docs = append(docs, it.Doc())
	}
	return docs, it.Err()
}

// DenseVector returns doc's vector in a dense vector field; ok is false
// when doc has none.
func (r *Reader) DenseVector(field int, doc uint32) ([]float32, bool, error) {
	if !r.fieldOK(field) || r.dense[field] == nil {
		return nil, false, fmt.Errorf("segment: field %d is not a dense vector field", field)
	}
	if doc >= r.numDocs {
		return nil, false, fmt.Errorf("segment: doc %d out of range (%d documents)", doc, r.numDocs)
	}
	c := r.dense[field]
	i, ok := c.index(doc)
	if !ok {
		return nil, false, nil
	}
	if i >= c.count {
		return nil, false, corruptf(r.id, SuffixVectors, "field %d doc %d: vector %d of %d", field, doc, i, c.count)
	}
	out := make([]float32, c.dims)
	b := c.vals[uint64(i)*uint64(c.dims)*4:]
	for k := range out {
		out[k] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*k:]))
	}
	return out, true, nil
}

// SparsePostings returns the documents having dimension dim of a sparse
// vector field, or nil, nil when no document has it.
func (r *Reader) SparsePostings(field int, dim string) (*SparsePostings, error) {
	if !r.fieldOK(field) || r.sparse[field] == nil {
		return nil, fmt.Errorf("segment: field %d is not a sparse vector field", field)
	}
	d := r.sparse[field]
	e, ok, err := d.lookup(dim)
	if err != nil || !ok {
		return nil, err
	}
	return newSparsePostings(d, e), nil
}

// SparseDims returns an iterator over a sparse vector field's dimensions.
func (r *Reader) SparseDims(field int) (*TermIterator, error) {
	if !r.fieldOK(field) || r.sparse[field] == nil {
		return nil, fmt.Errorf("segment: field %d is not a sparse vector field", field)
	}
	return &TermIterator{d: r.sparse[field]}, nil
}

// DocPostingsBytes returns the bytes of every docs section (doc-id gaps and
// frequencies) of every indexed field: the part of the postings that
// docid reordering compresses. Positions are excluded.
func (r *Reader) DocPostingsBytes() (int64, error) {
	var n int64
	for f := range r.schema.Fields {
		if !r.schema.Fields[f].IsIndexed() || r.schema.Fields[f].Type == schema.DenseVector || r.schema.Fields[f].Type == schema.SparseVector {
			continue
		}
		it, err := r.Terms(f)
		if err != nil {
			return 0, err
		}
		for it.Next() {
			n += int64(it.DocsBytes())
		}
		if err := it.Err(); err != nil {
			return 0, err
		}
	}
	return n, nil
}
