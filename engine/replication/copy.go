package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
	"golang.org/x/sync/errgroup"
)

// step is one round of an index's loop: one long poll and, when the
// leader has a newer committed generation, its copy and publication.
func (f *Follower) step(ctx context.Context, name string, fi *followed) error {
	local, uid, exists, err := f.local(name)
	if err != nil {
		return err
	}
	c, err := f.leader()
	if err != nil {
		return err
	}
	after := int64(local)
	if !exists {
		after = -1 // any generation, even an empty index's first
	}
	pctx, cancel := context.WithTimeout(ctx, f.cfg.PollWait+30*time.Second)
	st, err := c.ReplicationState(pctx, name, after, uid, f.cfg.PollWait)
	cancel()
	if err != nil {
		return err
	}
	if exists && uid != "" && st.UID != "" && st.UID != uid {
		// The leader's index of this name is another one (deleted and
		// created again, perhaps at this very generation number): its
		// files must not meet this copy's, whose IDs they may reuse.
		if st.Hold != "" {
			releaseHold(c, name, st.Hold)
		}
		f.log.Info("The leader's index was deleted and created again; recreating it here", "index", name,
			"leaderGeneration", st.Generation, "generation", local)
		fi.observe(client.ReplicationCatchingUp, st.Generation, 0)
		return f.recreate(ctx, name)
	}
	if st.Hold == "" {
		if exists && st.Generation < local {
			// A committed generation never goes back: the leader's index
			// of this name is a new one.
			f.log.Info("The leader's index is behind this copy: it was recreated; recreating it here", "index", name,
				"leaderGeneration", st.Generation, "generation", local)
			fi.observe(client.ReplicationCatchingUp, st.Generation, 0)
			return f.recreate(ctx, name)
		}
		fi.observe(client.ReplicationFollowing, st.Generation, local)
		return nil
	}
	defer releaseHold(c, name, st.Hold)
	fi.observe(client.ReplicationCatchingUp, st.Generation, local)
	start := time.Now()
	n, err := f.install(ctx, c, name, st)
	if errors.Is(err, index.ErrIncomparable) {
		f.log.Info("The leader's generation cannot follow this copy: recreating the index here", "index", name, "reason", err.Error())
		return f.recreate(ctx, name)
	}
	if err != nil {
		return err
	}
	fi.observe(client.ReplicationFollowing, st.Generation, st.Generation)
	if n > 0 {
		f.log.Info("Generation copied and published", "index", name, "generation", st.Generation,
			"bytes", n, "duration", time.Since(start).String())
	}
	return nil
}

// local returns the generation the follower serves for name, its UID,
// and whether it has that index.
func (f *Follower) local(name string) (uint64, string, bool, error) {
	g, uid, err := f.localIndex(name)
	if err != nil {
		return 0, "", false, err
	}
	for _, n := range f.reg.Names() {
		if n == name {
			return g, uid, true, nil
		}
	}
	return 0, "", false, nil
}

// install copies the held generation of st into the local index (created
// when missing) and publishes it: F02 (claims first), F03 (every file
// checked in full, then the commit point). It returns the bytes copied.
func (f *Follower) install(ctx context.Context, c *client.Client, name string, st *client.ReplicationState) (int64, error) {
	h, err := f.ensure(ctx, name, st)
	if err != nil {
		return 0, err
	}
	defer h.Release()
	ctx, cancel := h.Context(ctx)
	defer cancel()
	idx, err := h.Index()
	if err != nil {
		return 0, err
	}
	meta, err := decodeMetadata(st.Metadata)
	if err != nil {
		return 0, err
	}
	in, err := idx.PrepareIncoming(meta)
	switch {
	case errors.Is(err, index.ErrNotNewer):
		return 0, nil
	case err != nil:
		return 0, err
	}
	copied, err := f.downloadAll(ctx, c, in, name, st.Hold)
	if err != nil {
		in.Abandon()
		return copied, err
	}
	if _, err := in.Publish(ctx); err != nil {
		in.Abandon()
		return copied, fmt.Errorf("%w: %w", errRefused, err)
	}
	f.copied.Add(copied)
	return copied, nil
}

// downloadAll copies the files of the hold that in lacks, cfg.Downloads
// at a time. Each file is checked as it arrives: a segment whose files are
// all there is validated in full (F03) on the goroutine that downloaded
// its last one while the others go on downloading; Publish validates
// whatever was not. It returns the bytes copied and the first failure
// (the others are cancelled then).
func (f *Follower) downloadAll(ctx context.Context, c *client.Client, in *index.Incoming, name, hold string) (int64, error) {
	var copied atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.cfg.Downloads)
	for _, file := range in.Files() {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			n, err := f.download(gctx, c, in, name, hold, file)
			copied.Add(n)
			if err != nil {
				return err
			}
			if err := in.Check(gctx, file.Name); err != nil {
				return fmt.Errorf("%w: %w", errRefused, err)
			}
			return nil
		})
	}
	err := g.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return copied.Load(), err
}

// download copies one file of the hold into the incoming generation and
// checks its size (its content is checked in full by Check or Publish).
func (f *Follower) download(ctx context.Context, c *client.Client, in *index.Incoming, name, hold string, file index.SnapshotFile) (int64, error) {
	dst, err := in.Create(file.Name)
	if err != nil {
		return 0, err
	}
	w := &chunkWriter{dst: dst}
	n, err := c.DownloadReplicationFile(ctx, name, hold, file.Name, w)
	w.release()
	if cerr := dst.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("replication: close %s: %w", file.Name, cerr)
	}
	if err != nil {
		return n, err
	}
	if n != file.Size {
		return n, fmt.Errorf("%w: %s has %d bytes, the generation says %d", errRefused, file.Name, n, file.Size)
	}
	in.Closed(file.Name) // its fsync runs while the next file downloads
	return n, nil
}

// chunkSize is the size of a download's writes to its file.
const chunkSize = 1 << 20

// chunks are the buffers of downloads in progress, reused from file to
// file (a fresh buffer per file cost its zeroing, a share of a copy of
// small files).
var chunks = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// chunkWriter copies what it reads into its file chunkSize bytes at a
// time: io.Copy hands it the response body (ReadFrom), which it reads
// straight into a pooled buffer, so each byte is copied once from the
// socket and once to the file.
type chunkWriter struct {
	dst io.Writer
	buf *[]byte
}

// ReadFrom reads r to its end, writing every full chunk and the rest.
func (w *chunkWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.buf == nil {
		w.buf = chunks.Get().(*[]byte)
	}
	buf := *w.buf
	var total int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if _, err := w.dst.Write(buf[:n]); err != nil {
				return total, fmt.Errorf("replication: write: %w", err)
			}
			total += int64(n)
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			return total, nil
		case rerr != nil:
			return total, rerr
		}
	}
}

// Write writes p as it is (io.Copy calls ReadFrom instead).
func (w *chunkWriter) Write(p []byte) (int, error) { return w.dst.Write(p) }

// release returns the buffer to the pool.
func (w *chunkWriter) release() {
	if w.buf != nil {
		chunks.Put(w.buf)
		w.buf = nil
	}
}

// decodeMetadata decodes and validates a generation's metadata.
func decodeMetadata(raw []byte) (*metadata.Metadata, error) {
	if len(raw) == 0 {
		return nil, errors.New("replication: the leader's answer has no metadata")
	}
	m, err := metadata.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("replication: the leader's metadata: %w", err)
	}
	return m, nil
}

// BytesCopied returns the bytes of files copied and published so far.
func (f *Follower) BytesCopied() int64 { return f.copied.Load() }

// releaseHold releases a hold on the leader; it expires anyway.
func releaseHold(c *client.Client, name, hold string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.ReleaseHold(ctx, name, hold)
}
