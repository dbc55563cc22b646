package index

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/internal/rawfile"
	"github.com/summadev/summa/engine/segment"
)

// Recycling the replaced generation's inode (raw filesystem only): every
// commit creates three files (segment, mask, metadata.json.tmp) and frees
// one, the replaced metadata.json. On this project's ext4, without a
// journal, a create skips every inode freed in the last 30 s of its block
// group, so each create grew costlier as commits freed inodes (0.1-0.6 ms
// of kernel CPU each, the refill's largest cost, competing with the
// commit for the machine's two cores). The refill therefore gives an
// empty slot's name to the published metadata.json as a hard link
// (spareLinked); the next commit point's rename over metadata.json only
// drops a name of that inode, which then lives on as the slot's file
// (spareStale), and the refill empties it into a ready spare instead of
// creating one: no inode freed, one fewer created per commit.
//
// The replaced generation is emptied only after a directory fsync that
// began after the commit point's rename succeeded (syncedDir): before
// that, a crash of the machine could keep the old directory entry, so
// metadata.json would name the inode again, and emptying it then would
// lose the index. The live metadata.json is never emptied: rawfile.Reuse refuses to
// truncate a file that is (same inode) metadata.json, whatever the slot
// states say. On disk a linked slot is only one more name of a
// metadata.json (current or replaced); writer open and Close remove
// every spare name, which drops such a link and nothing else.

// linkMetadata gives slot's name to the published metadata.json.
func (s *spareFS) linkMetadata(slot int) error {
	path := s.FS.PathJoin(s.dir, spareName(slot))
	if err := rawfile.Link(s.meta, path); err != nil {
		return fmt.Errorf("index: link %s to %s: %w", s.meta, path, err)
	}
	return nil
}

// recycle empties slot's stale file (a replaced generation of
// metadata.json) and returns it open as a ready spare. errLive: the file
// is the published metadata.json after all; it stays linked.
func (s *spareFS) recycle(slot int) (vfs.File, error) {
	path := s.FS.PathJoin(s.dir, spareName(slot))
	file, err := rawfile.Reuse(path, s.meta)
	if errors.Is(err, rawfile.ErrSameFile) {
		return nil, errLive
	}
	if err != nil {
		return nil, fmt.Errorf("index: recycle spare %s: %w", path, err)
	}
	return file, nil
}

// errLive: a slot's linked file is the published metadata.json.
var errLive = errors.New("index: the linked spare is the published metadata.json")

// syncedDir is the index directory opened on the raw filesystem. A
// successful Sync that began after the last rename over metadata.json
// made that rename durable, so the replaced generation's file may be
// emptied: the slot linked to it becomes spareStale.
type syncedDir struct {
	vfs.File
	s *spareFS
}

// Sync implements vfs.File.
func (d syncedDir) Sync() error {
	d.s.mu.Lock()
	renames := d.s.mu.renames
	d.s.mu.Unlock()
	if err := d.File.Sync(); err != nil {
		return err
	}
	d.s.renameDurable(renames)
	return nil
}

// renameDurable records that the renames over metadata.json counted up
// to renames are durable, and starts the refill when that makes a slot's
// file (the linked generation's, an adopted retired file) recyclable.
func (s *spareFS) renameDurable(renames uint64) {
	s.mu.Lock()
	stale := false
	for i := range s.slots {
		if s.mu.state[i] == spareReplaced && s.mu.replacedAt[i] <= renames {
			s.mu.state[i], stale = spareStale, true
		}
	}
	refill := stale && s.startRefillLocked()
	s.mu.Unlock()
	if refill {
		s.run(s.refill)
	}
}

// Adopting retired deletion masks (raw filesystem only). An upsert commit
// writes a new mask generation of the segment holding the replaced
// document and retires the previous one: one more inode created and one
// freed per commit, with the cost above. When the tracker deletes a
// retired mask (no owner holds its ID, L02), Adopt renames the file to an
// empty slot's name instead: from then on no seg_ name refers to it, which
// is what the deletion means to the sweep and every owner. The slot waits
// as spareReplaced until a directory fsync that began after the last
// rename over metadata.json completes: the generation that retired the
// mask may not be durable before it (a failed directory fsync degrades a
// commit, C04), and a crash could bring back a generation that names the
// mask, so the file is emptied only after that fsync, like a replaced
// metadata.json. A crash before it leaves a spare name (removed at writer
// open) or the old seg_ name (an orphan the sweep removes), with the
// mask's bytes intact either way. Only masks are adopted: they are read
// whole and closed when loaded, so no reader holds one open.

// Adopt takes the retired file name (in the index directory) into an
// empty slot; false when it is not a deletion mask, no slot is empty, the
// filesystem is closed or the rename failed: the caller removes the file.
func (s *spareFS) Adopt(name string) bool {
	if !s.raw || s.slots == 0 || !strings.HasSuffix(name, "."+segment.MaskSuffix) {
		return false
	}
	s.mu.Lock()
	slot := -1
	for i := range s.slots {
		if s.mu.state[i] == spareEmpty && i != s.mu.linkSlot && !s.mu.closed {
			slot = i
			break
		}
	}
	if slot < 0 {
		s.mu.Unlock()
		return false
	}
	s.mu.state[slot] = spareAdopting
	s.mu.Unlock()
	err := s.rename(s.FS.PathJoin(s.dir, name), s.FS.PathJoin(s.dir, spareName(slot)))
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		s.mu.state[slot] = spareEmpty
		return false
	case s.mu.closed:
		// Close passed this slot: the file goes as it would have.
		_ = s.FS.Remove(s.FS.PathJoin(s.dir, spareName(slot)))
		s.mu.state[slot] = spareEmpty
		return true
	}
	s.mu.state[slot], s.mu.replacedAt[slot] = spareReplaced, s.mu.renames
	s.mu.adopted++
	return true
}
