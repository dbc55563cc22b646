package s3backup

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// Leases keep prune and running backups apart. A backup writes
// P/<index>/leases/backup-<id> before it decides what to reuse and
// refreshes it while it runs; prune writes P/<index>/leases/prune-<t>
// before it lists what to delete. Each writes its own lease and then
// lists the other kind (S3 lists are consistent after a PUT), so at least
// one of the two sees the other: a backup that sees a prune waits for it
// to end before it reuses any object; a prune that sees a running backup
// removes old manifests only and leaves every file object. A lease not
// refreshed within leaseTTL is stale (its process died) and ignored.
const (
	leaseTTL         = 15 * time.Minute
	leaseRefresh     = time.Minute
	pruneLeaseWait   = 5 * time.Minute
	backupLeaseName  = "backup-"
	pruneLeasePrefix = "prune-"
)

func (l layout) leasesPrefix(index string) string { return l.join(index, "leases") + "/" }

func (l layout) leaseKey(index, name string) string { return l.leasesPrefix(index) + name }

// liveLeases lists the fresh leases of index whose name starts with kind.
func (s *Store) liveLeases(ctx context.Context, cl *minio.Client, index, kind string) ([]string, error) {
	var out []string
	for o := range cl.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.layout.leasesPrefix(index) + kind, Recursive: true}) {
		if o.Err != nil {
			if isNoSuchKey(o.Err) {
				return nil, nil
			}
			return nil, fmt.Errorf("s3backup: list leases: %w", o.Err)
		}
		if time.Since(o.LastModified) < leaseTTL {
			out = append(out, o.Key)
		}
	}
	return out, nil
}

// putLease writes (or refreshes) a lease.
func (s *Store) putLease(ctx context.Context, cl *minio.Client, key string) error {
	body := []byte(time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := cl.PutObject(ctx, s.cfg.Bucket, key, bytes.NewReader(body), int64(len(body)),
		minio.PutObjectOptions{ContentType: "text/plain"}); err != nil {
		return fmt.Errorf("s3backup: write lease %s: %w", key, err)
	}
	return nil
}

// holdBackupLease writes the backup's lease, waits while a prune runs,
// and refreshes the lease until release is called (which removes it).
func (s *Store) holdBackupLease(ctx context.Context, cl *minio.Client, index, id string) (release func(), err error) {
	key := s.layout.leaseKey(index, backupLeaseName+id)
	if err := s.putLease(ctx, cl, key); err != nil {
		return nil, err
	}
	remove := func() {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cl.RemoveObject(rctx, s.cfg.Bucket, key, minio.RemoveObjectOptions{})
	}
	deadline := time.Now().Add(pruneLeaseWait)
	for {
		prunes, err := s.liveLeases(ctx, cl, index, pruneLeasePrefix)
		if err != nil {
			remove()
			return nil, err
		}
		if len(prunes) == 0 {
			break
		}
		if time.Now().After(deadline) {
			remove()
			return nil, fmt.Errorf("s3backup: a prune of index %s holds %s for more than %s", index, prunes[0], pruneLeaseWait)
		}
		select {
		case <-ctx.Done():
			remove()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(leaseRefresh)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = s.putLease(ctx, cl, key)
			}
		}
	}()
	return func() { close(stop); <-done; remove() }, nil
}

// PruneReport is what a prune removed.
type PruneReport struct {
	// Kept are the IDs of the backups kept, newest first.
	Kept []string `json:"kept"`
	// RemovedBackups are the IDs whose manifests were removed.
	RemovedBackups []string `json:"removedBackups"`
	// RemovedObjects and RemovedBytes count the file objects removed.
	RemovedObjects int   `json:"removedObjects"`
	RemovedBytes   int64 `json:"removedBytes"`
	// ObjectsKeptForRunningBackup is set when a running backup was seen:
	// the manifests were removed, the file objects left for a later prune.
	ObjectsKeptForRunningBackup bool `json:"objectsKeptForRunningBackup,omitempty"`
}

// Prune keeps the keep newest backups of index: it removes the older
// manifests first (those backups cease to exist at once), then every file
// object no remaining manifest names, unless a backup of the index is
// running (see the leases above), in which case file objects are left
// for a later prune.
func (s *Store) Prune(ctx context.Context, index string, keep int) (rep PruneReport, err error) {
	rep = PruneReport{Kept: []string{}, RemovedBackups: []string{}}
	if keep < 1 {
		return rep, fmt.Errorf("s3backup: prune: keep must be at least 1")
	}
	cl, err := newClient(s.cfg)
	if err != nil {
		return rep, err
	}
	lease := s.layout.leaseKey(index, pruneLeasePrefix+NewID(time.Now()))
	if err := s.putLease(ctx, cl, lease); err != nil {
		return rep, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cl.RemoveObject(rctx, s.cfg.Bucket, lease, minio.RemoveObjectOptions{})
	}()
	ids, err := s.listIDs(ctx, cl, index)
	if err != nil {
		return rep, err
	}
	if len(ids) > keep {
		for _, id := range ids[keep:] {
			if err := cl.RemoveObject(ctx, s.cfg.Bucket, s.layout.manifestKey(index, id), minio.RemoveObjectOptions{}); err != nil {
				return rep, fmt.Errorf("s3backup: prune: remove manifest %s: %w", id, err)
			}
			rep.RemovedBackups = append(rep.RemovedBackups, id)
		}
	}
	running, err := s.liveLeases(ctx, cl, index, backupLeaseName)
	if err != nil {
		return rep, err
	}
	// The remaining manifests, read again: the names they hold stay.
	ids, err = s.listIDs(ctx, cl, index)
	if err != nil {
		return rep, err
	}
	rep.Kept = append(rep.Kept, ids...)
	if len(running) > 0 {
		rep.ObjectsKeptForRunningBackup = true
		return rep, nil
	}
	named := map[string]bool{}
	for _, id := range ids {
		m, err := s.get(ctx, cl, index, id)
		if err != nil {
			// A manifest that cannot be read protects nothing it might
			// name: stop rather than delete what it could need.
			return rep, fmt.Errorf("s3backup: prune: read manifest %s (nothing more removed): %w", id, err)
		}
		for _, f := range m.Files {
			named[f.Key] = true
		}
	}
	var victims []minio.ObjectInfo
	for o := range cl.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.layout.filesPrefix(index), Recursive: true}) {
		if o.Err != nil {
			return rep, fmt.Errorf("s3backup: prune: list files: %w", o.Err)
		}
		if !named[o.Key] && !strings.HasSuffix(o.Key, "/") {
			victims = append(victims, o)
		}
	}
	sort.Slice(victims, func(i, j int) bool { return victims[i].Key < victims[j].Key })
	for _, o := range victims {
		if err := cl.RemoveObject(ctx, s.cfg.Bucket, o.Key, minio.RemoveObjectOptions{}); err != nil {
			return rep, fmt.Errorf("s3backup: prune: remove %s: %w", o.Key, err)
		}
		rep.RemovedObjects++
		rep.RemovedBytes += o.Size
	}
	return rep, nil
}
