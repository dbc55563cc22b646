package registry

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"

	"github.com/summadev/summa/engine/metadata"
)

// trashPrefix starts the name an index directory is renamed to before its
// files are removed; it starts with a dot, so it is never a valid index
// name. Every version has used this prefix, and the startup sweep removes
// any entry that carries it, whatever follows: trash an older version left
// (".summa-trash-<name>-<nanos>") is finished like this version's.
const trashPrefix = ".summa-trash-"

// trashNameLen is the length of every trash name this version makes: the
// prefix, 16 hex digits of the index name's SHA-256, a dash and 16 random
// hex digits. It does not depend on the index name, so that it stays far
// below the 255-byte limit of a file name for every legal name (up to 253
// characters). The index name itself is recorded in the .deleting marker
// the trash directory carries.
const trashNameLen = len(trashPrefix) + 16 + 1 + 16

// trashName returns a fresh trash name for the index directory name.
// The hash groups the trash of one name in listings; the random part keeps
// two deletions of the same name apart.
func trashName(name string) (string, error) {
	sum := sha256.Sum256([]byte(name))
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("registry: trash name: %w", err)
	}
	return trashPrefix + hex.EncodeToString(sum[:8]) + "-" + hex.EncodeToString(nonce[:]), nil
}

// isTrash reports whether an entry of the data directory is the trash of
// a removal, of this version or an older one.
func isTrash(name string) bool { return strings.HasPrefix(name, trashPrefix) }

// removeDir removes an index directory durably. The directory is first
// renamed to a trash name in one atomic step, so that a crash while its
// files are being removed can never leave a half-removed directory under
// the index's name (which could reopen as a damaged index); leftover trash
// is removed at the next start (D03).
func (r *Registry) removeDir(dir string) error {
	trash, err := trashName(r.fs.PathBase(dir))
	if err != nil {
		return err
	}
	trash = r.fs.PathJoin(r.dir, trash)
	if err := r.fs.Rename(dir, trash); err != nil {
		return fmt.Errorf("registry: remove %s: rename into the trash: %w", dir, err)
	}
	// Sync the data directory: the index's name is gone before any file is,
	// so a crash from here on finds trash, never a half-removed index.
	if err := metadata.SyncDir(r.fs, r.dir); err != nil {
		return fmt.Errorf("registry: remove %s: %w", dir, err)
	}
	if err := r.fs.RemoveAll(trash); err != nil {
		return fmt.Errorf("registry: remove %s: %w", trash, err)
	}
	// Sync again so that the trash entry does not come back after a crash
	// (it would only be swept again, but the space would stay taken).
	if err := metadata.SyncDir(r.fs, r.dir); err != nil {
		return fmt.Errorf("registry: remove %s: %w", trash, err)
	}
	return nil
}

// removeTrash removes directories left by a removal that crashed, of this
// version or an older one (D03).
func (r *Registry) removeTrash(names []string) error {
	removed := false
	for _, name := range names {
		if !isTrash(name) {
			continue
		}
		if err := r.fs.RemoveAll(r.fs.PathJoin(r.dir, name)); err != nil {
			return fmt.Errorf("registry: remove trash %s: %w", name, err)
		}
		removed = true
		r.log.Info("Removed the trash of an interrupted index deletion", "trash", name)
	}
	if !removed {
		return nil
	}
	// The trash entries stay gone after a crash.
	if err := metadata.SyncDir(r.fs, r.dir); err != nil {
		return fmt.Errorf("registry: remove trash: %w", err)
	}
	return nil
}

// finishMarkedRemoval removes the directory of an index whose deletion
// started (its .deleting marker exists) and did not finish: the process
// died during the deletion, or step 7 failed. It reports whether there was
// such a directory. The caller holds the name's lease or runs before the
// registry serves.
func (r *Registry) finishMarkedRemoval(dir string) (bool, error) {
	if _, err := r.fs.Stat(r.fs.PathJoin(dir, DeletingMarker)); errors.Is(err, iofs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("registry: look for the deletion marker of %s: %w", dir, err)
	}
	if err := r.removeDir(dir); err != nil {
		return true, err
	}
	return true, nil
}
