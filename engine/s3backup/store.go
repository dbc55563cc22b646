package s3backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/minio/minio-go/v7"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
)

// partSize is the part size of multipart uploads: files above it are
// uploaded in parts (S3's minimum part size is 5 MiB).
const partSize = 8 << 20

// shaKey is the user metadata that records a file object's SHA-256.
const shaKey = "Summa-Sha256"

// Store is the object store of one configuration. Every operation builds
// its client anew, reading the credentials and CA files then.
type Store struct {
	cfg    Config
	layout layout
}

// New returns the store of cfg (validated).
func New(cfg Config) (*Store, error) {
	if !cfg.Configured() {
		return nil, ErrNotConfigured
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Store{cfg: cfg, layout: newLayout(cfg.Prefix)}, nil
}

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.cfg.Bucket }

// FileKey returns the key of the object of a file of index with that name
// and SHA-256 (tests and tools use it).
func (s *Store) FileKey(index, name, sha string) string { return s.layout.fileKey(index, name, sha) }

// ManifestKey returns the key of a backup's manifest.
func (s *Store) ManifestKey(index, id string) string { return s.layout.manifestKey(index, id) }

// Progress counts what a running backup did so far.
type Progress struct {
	// Bytes is what was uploaded; ReusedBytes what was found in the bucket.
	Bytes, ReusedBytes atomic.Int64
	// Files counts the files done (uploaded or reused); TotalFiles the
	// files of the generation.
	Files, TotalFiles atomic.Int64
}

// UploadRequest is one backup of a pinned generation.
type UploadRequest struct {
	// Index is the index name; ID the backup's ID (NewID).
	Index, ID string
	// FS and Dir locate the index directory. Every file Meta names must
	// stay there until Upload returns: the caller holds the generation's
	// tracker references (index.PinCommitted).
	FS  vfs.FS
	Dir string
	// Meta is the pinned generation; Documents its live document count.
	Meta      *metadata.Metadata
	Documents uint64
	// EngineVersion goes into the manifest.
	EngineVersion string
	// StartedAt is when the backup was requested.
	StartedAt time.Time
	// Progress, if set, is updated as files are done.
	Progress *Progress
	// BeforeFile, if set, is called before each file is read (tests).
	BeforeFile func(name string)
	// BeforeManifest, if set, is called before the manifest is written
	// (tests).
	BeforeManifest func()
}

// Upload writes a backup: every file of the generation not already in the
// bucket under its name and checksum, then the manifest, last. It
// returns the manifest. An error at any point writes no manifest.
func (s *Store) Upload(ctx context.Context, req UploadRequest) (*Manifest, error) {
	cl, err := newClient(s.cfg)
	if err != nil {
		return nil, err
	}
	if err := s.ensureBucket(ctx, cl); err != nil {
		return nil, err
	}
	// The lease keeps a prune from removing an object this backup reuses
	// (see prune.go); it is removed once the manifest is written or the
	// backup failed.
	release, err := s.holdBackupLease(ctx, cl, req.Index, req.ID)
	if err != nil {
		return nil, err
	}
	defer release()
	metaJSON, err := json.Marshal(req.Meta)
	if err != nil {
		return nil, fmt.Errorf("s3backup: encode metadata: %w", err)
	}
	prog := req.Progress
	if prog == nil {
		prog = &Progress{}
	}
	files := index.CommittedFiles(req.Meta)
	prog.TotalFiles.Store(int64(len(files)))
	m := &Manifest{Format: ManifestFormat, ID: req.ID, Index: req.Index, Generation: req.Meta.Generation,
		Documents: req.Documents, EngineVersion: req.EngineVersion, StartedAt: req.StartedAt.UTC(),
		Metadata: metaJSON, Files: make([]File, 0, len(files))}
	results, err := s.uploadFiles(ctx, cl, req, files, prog)
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		if r.uploaded {
			m.Bytes += r.file.Size
		} else {
			m.ReusedBytes += r.file.Size
		}
		m.Files = append(m.Files, r.file)
	}
	if req.BeforeManifest != nil {
		req.BeforeManifest()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.CompletedAt = time.Now().UTC()
	data, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return nil, fmt.Errorf("s3backup: encode manifest: %w", err)
	}
	// The manifest, last: one PUT, so the backup appears whole or not at all.
	key := s.layout.manifestKey(req.Index, req.ID)
	if _, err := cl.PutObject(ctx, s.cfg.Bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/json", SendContentMd5: true}); err != nil {
		return nil, fmt.Errorf("s3backup: write manifest %s: %w", key, err)
	}
	return m, nil
}

// transferConcurrency is how many files a backup uploads, or a restore
// downloads, at once: a file's checksum pass, its upload and the store's
// writes overlap those of the others.
const transferConcurrency = 4

// uploaded is the outcome of one file of a backup.
type uploaded struct {
	file     File
	uploaded bool
}

// uploadFiles uploads files, transferConcurrency at once, and returns
// their outcomes in the order of files. The first error cancels the
// others and is returned.
func (s *Store) uploadFiles(ctx context.Context, cl *minio.Client, req UploadRequest, files []index.SnapshotFile,
	prog *Progress) ([]uploaded, error) {
	lim := newLimiter(s.cfg.UploadBytesPerSecond)
	out := make([]uploaded, len(files))
	err := forEach(ctx, len(files), func(ctx context.Context, i int) error {
		f := files[i]
		if req.BeforeFile != nil {
			req.BeforeFile(f.Name)
		}
		bf, up, err := s.uploadFile(ctx, cl, req, f, lim)
		if err != nil {
			return err
		}
		if up {
			prog.Bytes.Add(bf.Size)
		} else {
			prog.ReusedBytes.Add(bf.Size)
		}
		prog.Files.Add(1)
		out[i] = uploaded{file: bf, uploaded: up}
		return nil
	})
	return out, err
}

// forEach runs fn(ctx, 0..n-1), transferConcurrency at once, until the
// first error, which it returns (later calls are not started; running
// ones see their ctx cancelled). It returns ctx's error when ctx ends
// first.
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	sem := make(chan struct{}, transferConcurrency)
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// ensureBucket creates the bucket when it does not exist.
func (s *Store) ensureBucket(ctx context.Context, cl *minio.Client) error {
	ok, err := cl.BucketExists(ctx, s.cfg.Bucket)
	if err != nil {
		return fmt.Errorf("s3backup: bucket %s: %w", s.cfg.Bucket, err)
	}
	if ok {
		return nil
	}
	region := s.cfg.Region
	if region == "" {
		region = DefaultRegion
	}
	if err := cl.MakeBucket(ctx, s.cfg.Bucket, minio.MakeBucketOptions{Region: region}); err != nil {
		if code := minio.ToErrorResponse(err).Code; code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
			return nil
		}
		return fmt.Errorf("s3backup: create bucket %s: %w", s.cfg.Bucket, err)
	}
	return nil
}

// uploadFile checksums one file and uploads it unless an object of the
// same name and checksum is in the bucket already (uploaded false).
func (s *Store) uploadFile(ctx context.Context, cl *minio.Client, req UploadRequest, f index.SnapshotFile,
	lim *limiter) (File, bool, error) {
	path := req.FS.PathJoin(req.Dir, f.Name)
	file, err := req.FS.Open(path)
	if err != nil {
		return File{}, false, fmt.Errorf("s3backup: open %s: %w", f.Name, err)
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(file, 0, f.Size+1))
	if err != nil {
		return File{}, false, fmt.Errorf("s3backup: read %s: %w", f.Name, err)
	}
	if n != f.Size {
		return File{}, false, fmt.Errorf("s3backup: %s has %d bytes, metadata says %d", f.Name, n, f.Size)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	bf := File{Name: f.Name, Size: f.Size, SHA256: sum, Key: s.layout.fileKey(req.Index, f.Name, sum)}
	if st, err := cl.StatObject(ctx, s.cfg.Bucket, bf.Key, minio.StatObjectOptions{}); err == nil {
		if st.Size == f.Size && metaValue(st.UserMetadata, shaKey) == sum {
			return bf, false, nil
		}
		// Same key, other size or checksum: not ours as it should be;
		// upload over it.
	} else if code := minio.ToErrorResponse(err).Code; code != "NoSuchKey" && code != "NotFound" {
		return File{}, false, fmt.Errorf("s3backup: stat %s: %w", bf.Key, err)
	}
	r := &limitedReaderAt{ctx: ctx, r: file, lim: lim}
	info, err := cl.PutObject(ctx, s.cfg.Bucket, bf.Key, io.NewSectionReader(r, 0, f.Size), f.Size,
		minio.PutObjectOptions{ContentType: "application/octet-stream", UserMetadata: map[string]string{shaKey: sum},
			PartSize: partSize, SendContentMd5: true})
	if err != nil {
		return File{}, false, fmt.Errorf("s3backup: upload %s as %s: %w", f.Name, bf.Key, err)
	}
	if info.Size != f.Size {
		return File{}, false, fmt.Errorf("s3backup: upload %s: the store took %d bytes of %d", f.Name, info.Size, f.Size)
	}
	return bf, true, nil
}

// metaValue finds a user metadata value whatever the case of its key.
func metaValue(m map[string]string, key string) string {
	for k, v := range m {
		if strings.EqualFold(k, key) || strings.EqualFold(k, "X-Amz-Meta-"+key) {
			return v
		}
	}
	return ""
}

// List returns the completed backups of index in the bucket, newest
// first. Manifests that cannot be read are skipped (and reported in
// skipped).
func (s *Store) List(ctx context.Context, index string) (out []*Manifest, skipped []error, err error) {
	cl, err := newClient(s.cfg)
	if err != nil {
		return nil, nil, err
	}
	ids, err := s.listIDs(ctx, cl, index)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		m, err := s.get(ctx, cl, index, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			skipped = append(skipped, err)
			continue
		}
		out = append(out, m)
	}
	return out, skipped, nil
}

// listIDs returns the IDs of every manifest of index, newest first.
func (s *Store) listIDs(ctx context.Context, cl *minio.Client, index string) ([]string, error) {
	var ids []string
	for obj := range cl.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.layout.manifestsPrefix(index), Recursive: true}) {
		if obj.Err != nil {
			if code := minio.ToErrorResponse(obj.Err).Code; code == "NoSuchBucket" {
				return nil, nil
			}
			return nil, fmt.Errorf("s3backup: list the backups of %s: %w", index, obj.Err)
		}
		if id := s.layout.idOfManifestKey(index, obj.Key); id != "" {
			ids = append(ids, id)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids, nil
}

// Get returns the manifest of a backup; ErrNotFound when it has none.
func (s *Store) Get(ctx context.Context, index, id string) (*Manifest, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	cl, err := newClient(s.cfg)
	if err != nil {
		return nil, err
	}
	return s.get(ctx, cl, index, id)
}

// Latest returns the newest backup of index; ErrNotFound when none.
func (s *Store) Latest(ctx context.Context, index string) (*Manifest, error) {
	cl, err := newClient(s.cfg)
	if err != nil {
		return nil, err
	}
	return s.latest(ctx, cl, index)
}

func (s *Store) latest(ctx context.Context, cl *minio.Client, index string) (*Manifest, error) {
	ids, err := s.listIDs(ctx, cl, index)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: index %s has no backup in bucket %s", ErrNotFound, index, s.cfg.Bucket)
	}
	return s.get(ctx, cl, index, ids[0])
}

func (s *Store) get(ctx context.Context, cl *minio.Client, index, id string) (*Manifest, error) {
	key := s.layout.manifestKey(index, id)
	data, err := getAll(ctx, cl, s.cfg.Bucket, key, 1<<30)
	if err != nil {
		if isNoSuchKey(err) {
			return nil, fmt.Errorf("%w: index %s has no backup %s in bucket %s", ErrNotFound, index, id, s.cfg.Bucket)
		}
		return nil, fmt.Errorf("s3backup: read manifest %s: %w", key, err)
	}
	return decodeManifest(data, index, id)
}

// isNoSuchKey reports whether err says the object does not exist.
func isNoSuchKey(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound" || code == "NoSuchBucket"
}

// getAll reads a whole object of at most limit bytes.
func getAll(ctx context.Context, cl *minio.Client, bucket, key string, limit int64) ([]byte, error) {
	obj, err := cl.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	data, err := io.ReadAll(io.LimitReader(obj, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// limiter paces reads to a rate (nil: no bound).
type limiter struct {
	rate  int64
	mu    sync.Mutex
	start time.Time
	n     int64
}

func newLimiter(rate int64) *limiter {
	if rate <= 0 {
		return nil
	}
	return &limiter{rate: rate, start: time.Now()}
}

// wait accounts n bytes and sleeps until the rate allows them.
func (l *limiter) wait(ctx context.Context, n int) error {
	if l == nil || n <= 0 {
		return ctx.Err()
	}
	l.mu.Lock()
	l.n += int64(n)
	due := l.start.Add(time.Duration(float64(l.n) / float64(l.rate) * float64(time.Second)))
	l.mu.Unlock()
	d := time.Until(due)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// limitedReaderAt reads through a limiter.
type limitedReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
	lim *limiter
}

// ReadAt reads, then waits for the rate.
func (l *limitedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := l.r.ReadAt(p, off)
	if werr := l.lim.wait(l.ctx, n); werr != nil && (err == nil || errors.Is(err, io.EOF)) {
		return n, werr
	}
	return n, err
}
