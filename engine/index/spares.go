package index

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"runtime"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/internal/rawfile"
	"github.com/summadev/summa/engine/metadata"
)

// spareSlots is the number of spare slots of a writer: one one-document
// upsert commit creates three files (its segment, the new deletion mask of
// the segment holding the replaced document, and metadata.json.tmp), a
// commit of two workers four, and on the raw filesystem one more slot
// holds the published metadata.json's link and one stays empty for a
// retired deletion mask to be adopted into (recycle.go).
const spareSlots = 6

// spareName is the name of spare slot i in the index directory. It is not
// a segment file name (seg_<ID>.*), so the orphan sweep never sees it;
// writer open removes every slot's leftover (removeSpares).
func spareName(i int) string { return fmt.Sprintf("spare.%d", i) }

// spareFS is the index filesystem of the commit path (flushed segments,
// deletion masks, metadata.json.tmp). Its Create renames a ready spare, an
// empty file created earlier off the commit's critical path, to the
// requested name and opens it, instead of creating an inode: on this
// project's disks (ext4) a create costs 0.1-0.3 ms of kernel CPU, a
// rename of a fresh name about 30 µs. The result is the same as Create: an
// empty file under the requested name, open for writing, unsynced. A
// spare is renamed into place only after its name's owner exists (the
// output's claim, L07; the metadata transaction), and the commit's
// directory fsync before the metadata rename makes the new entry durable
// as it does for a created file (C02). Consumed slots are refilled by one
// background goroutine, which Close drains (D01 step 6) before removing
// the unused spares. Without ready spares, Create creates. A ready spare
// is held open, so that Create is one rename and the file it returns is
// that descriptor. On the operating system's filesystem (Linux) the
// commit path's opens, renames and the spares' creation are single
// system calls (package rawfile) instead of pebble's os.File wrappers.
type spareFS struct {
	vfs.FS
	// dir is the index directory; only files created in it use spares.
	dir string
	// meta is the path of metadata.json in dir.
	meta string
	// slots is the number of slots in use (at most spareSlots).
	slots int
	// raw is set on the operating system's filesystem where rawfile opens
	// and renames.
	raw bool
	// log receives refill failures.
	log logr.Logger
	// run starts the refill (Hooks.SpareRefill; default: a goroutine).
	run func(refill func())
	// fills counts the running refill goroutine (0 or 1).
	fills sync.WaitGroup

	mu struct {
		sync.Mutex
		// state is each slot's state.
		state [spareSlots]spareState
		// files holds each ready slot's spare, open for writing.
		files [spareSlots]vfs.File
		// filling is set while the refill goroutine runs.
		filling bool
		// held is metadata.json of the published generation, held open so
		// that the rename of the next generation over it only drops its
		// name: the inode is freed when the refill closes it (see Rename).
		held vfs.File
		// release is a replaced generation's file for the refill to close.
		release vfs.File
		// reopen asks the refill to open metadata.json into held.
		reopen bool
		// closed stops refills and the use of spares.
		closed bool
		// linkSlot is the slot in the recycling cycle (being linked,
		// linked, stale or being recycled), -1 for none.
		linkSlot int
		// noLink is set after a link failed: spares are created only.
		noLink bool
		// renames counts the renames over metadata.json.
		renames uint64
		// adopted counts the retired masks taken by Adopt.
		adopted int
		// replacedAt is, for a spareReplaced slot, the rename count a
		// directory fsync must have begun at (or after) to make the slot's
		// file free to empty: the rename that replaced the linked
		// generation, or the last rename before a retired file was
		// adopted (recycle.go).
		replacedAt [spareSlots]uint64
	}
}

// spareState is the state of one spare slot.
type spareState uint8

const (
	// spareEmpty: no file; the refill creates one.
	spareEmpty spareState = iota
	// spareCreating: the refill is creating the file.
	spareCreating
	// spareReady: the file exists, empty, unused.
	spareReady
	// spareTaken: Create is renaming the file into place; the refill
	// leaves the slot alone until the name is free (creating the spare
	// anew would replace the file Create returns).
	spareTaken
	// spareBroken: creating the file failed; the slot is not used again.
	spareBroken
	// spareLinked: the slot's name is a hard link to the published
	// metadata.json (recycle.go).
	spareLinked
	// spareReplaced: the linked generation was replaced by a rename that
	// is not durable yet; the slot waits for the directory's fsync
	// (recycle.go).
	spareReplaced
	// spareStale: the linked generation was replaced durably, or the
	// adopted retired file is named by no durable generation; the refill
	// empties the file into a ready spare (recycle.go).
	spareStale
	// spareAdopting: a retired deletion mask is being renamed to the
	// slot's name (Adopt, recycle.go); it then waits as spareReplaced.
	spareAdopting
)

// newSpareFS returns the spare-aware filesystem of a writer of dir with
// the given number of slots (0: Create always creates).
func newSpareFS(fs vfs.FS, dir string, slots int, log logr.Logger, run func(refill func())) *spareFS {
	if run == nil {
		run = func(refill func()) { go refill() }
	}
	// dir as PathDir returns it for the files in it.
	dir = fs.PathDir(fs.PathJoin(dir, spareName(0)))
	s := &spareFS{FS: fs, dir: dir, meta: fs.PathJoin(dir, metadata.FileName),
		slots: min(max(slots, 0), spareSlots), raw: rawfile.Supported(fs), log: log, run: run}
	s.mu.linkSlot = -1
	return s
}

// spareCount is the number of spare slots of a writer: opts.SpareFiles,
// or by default spareSlots on the operating system's filesystem on Linux
// and none elsewhere (the in-memory test filesystem keeps its operations in a
// deterministic order for the crash harness).
func spareCount(fs vfs.FS, opts Options) int {
	switch {
	case opts.SpareFiles < 0:
		return 0
	case opts.SpareFiles > 0:
		return min(opts.SpareFiles, spareSlots)
	case fs == vfs.Default && runtime.GOOS == "linux":
		// Linux only: elsewhere a rename over the held metadata.json
		// may fail (Windows refuses to replace an open file).
		return spareSlots
	}
	return 0
}

// removeSpares removes the spare files a previous writer left in dir (a
// crash, or a failed removal at close). REQUIRES: the writer lock.
func removeSpares(fs vfs.FS, dir string) {
	for i := range spareSlots {
		_ = fs.Remove(fs.PathJoin(dir, spareName(i)))
	}
}

// Create implements vfs.FS: a ready spare renamed to name, else a new file.
// Either way the refill of the consumed or missing spares starts after it.
func (s *spareFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if s.slots == 0 || s.FS.PathDir(name) != s.dir {
		return s.FS.Create(name, category)
	}
	slot, f := s.take()
	if slot < 0 {
		s.startRefill()
		return s.FS.Create(name, category)
	}
	spare := s.FS.PathJoin(s.dir, spareName(slot))
	err := s.rename(spare, name)
	if err != nil {
		_ = f.Close()
		_ = s.FS.Remove(spare)
	}
	s.mu.Lock()
	s.mu.state[slot] = spareEmpty // the name is free for the refill
	s.mu.Unlock()
	s.startRefill()
	if err != nil {
		return s.FS.Create(name, category)
	}
	// The descriptor opened on the spare is the file's under its new name.
	return f, nil
}

// startRefill starts the refill unless it runs or the filesystem is
// closed.
func (s *spareFS) startRefill() {
	s.mu.Lock()
	refill := s.startRefillLocked()
	s.mu.Unlock()
	if refill {
		s.run(s.refill)
	}
}

// rename renames from to to: one system call on the operating system's
// filesystem.
func (s *spareFS) rename(from, to string) error {
	if s.raw {
		return rawfile.Rename(from, to)
	}
	return s.FS.Rename(from, to)
}

// Open implements vfs.FS: a file of the index directory opens with one
// system call on the operating system's filesystem (the metadata save
// opens the commit's unsynced files to sync them).
func (s *spareFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if !s.raw || len(opts) > 0 || s.FS.PathDir(name) != s.dir {
		return s.FS.Open(name, opts...)
	}
	return rawfile.Open(name)
}

// OpenDir implements vfs.FS: the index directory opens with one system
// call on the operating system's filesystem (for its fsyncs).
func (s *spareFS) OpenDir(name string) (vfs.File, error) {
	if !s.raw || s.FS.PathDir(s.FS.PathJoin(name, spareName(0))) != s.dir {
		return s.FS.OpenDir(name)
	}
	d, err := rawfile.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return syncedDir{File: d, s: s}, nil
}

// take returns a ready slot, now taken, with its open spare (-1 if none
// is ready).
func (s *spareFS) take() (slot int, f vfs.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return -1, nil
	}
	for i := range s.slots {
		if s.mu.state[i] == spareReady {
			f = s.mu.files[i]
			s.mu.state[i], s.mu.files[i] = spareTaken, nil
			return i, f
		}
	}
	return -1, nil
}

// startRefillLocked reports whether the caller must start the refill
// (then counted in s.fills). REQUIRES: s.mu.
func (s *spareFS) startRefillLocked() bool {
	if s.mu.filling || s.mu.closed {
		return false
	}
	s.mu.filling = true
	s.fills.Add(1)
	return true
}

// Rename implements vfs.FS. Renaming a generation over metadata.json (the
// commit point) finds the replaced generation's file held open, so the
// rename only drops its name, about 20 µs, where freeing the inode inside
// the rename cost about 0.2 ms; the refill then closes it (freeing it off
// the commit's path) and opens the new metadata.json. The held file is
// read-only and never read: it changes nothing on disk, and a crash
// leaves nothing behind that a rename without it would not.
func (s *spareFS) Rename(from, to string) error {
	if s.slots == 0 || to != s.meta {
		return s.FS.Rename(from, to)
	}
	err := s.rename(from, to)
	s.mu.Lock()
	if err == nil && s.mu.held != nil {
		s.mu.release, s.mu.held = s.mu.held, nil
	}
	if err == nil {
		s.mu.renames++
	}
	if k := s.mu.linkSlot; err == nil && k >= 0 && (s.mu.state[k] == spareLinked || s.mu.state[k] == spareReplaced) {
		// The linked file is now the replaced generation's; it is emptied
		// only once a directory fsync made this rename durable.
		s.mu.state[k], s.mu.replacedAt[k] = spareReplaced, s.mu.renames
	}
	s.mu.reopen = s.mu.held == nil
	refill := s.startRefillLocked()
	s.mu.Unlock()
	if refill {
		s.run(s.refill)
	}
	return err
}

// swapMetadata closes the replaced generation's file and opens
// metadata.json into held, as Rename asked.
func (s *spareFS) swapMetadata() {
	s.mu.Lock()
	release, reopen := s.mu.release, s.mu.reopen && !s.mu.closed
	s.mu.release, s.mu.reopen = nil, false
	s.mu.Unlock()
	if release != nil {
		_ = release.Close()
	}
	if !reopen {
		return
	}
	f, err := s.Open(s.meta)
	if err != nil {
		return // the next commit's rename frees the inode itself
	}
	s.mu.Lock()
	if s.mu.held == nil && !s.mu.closed {
		s.mu.held, f = f, nil
	}
	s.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
}

// The refill's jobs on one slot.
const (
	jobCreate = iota
	jobLink
	jobRecycle
)

// nextJobLocked picks the refill's next job and marks its slot
// spareCreating: a stale file to recycle, else (raw filesystem) an empty
// slot to link to metadata.json when none is in the recycling cycle, else
// an empty slot to create, on the raw filesystem with every slot in use
// only while another one stays empty (for Adopt); slot -1 for none.
// REQUIRES: s.mu.
func (s *spareFS) nextJobLocked() (slot, job int) {
	if s.mu.closed {
		return -1, 0
	}
	for i := range s.slots {
		if s.mu.state[i] == spareStale {
			s.mu.state[i] = spareCreating
			return i, jobRecycle
		}
	}
	empty := -1
	for i := range s.slots {
		if s.mu.state[i] == spareEmpty {
			if s.raw && !s.mu.noLink && s.mu.linkSlot < 0 && s.slots > 1 {
				s.mu.state[i], s.mu.linkSlot = spareCreating, i
				return i, jobLink
			}
			if empty >= 0 || !s.raw || s.slots < spareSlots {
				s.mu.state[i] = spareCreating
				return i, jobCreate
			}
			// On the raw filesystem the first empty slot is kept for Adopt
			// while it is the only one.
			empty = i
		}
	}
	return -1, 0
}

// refill fills every empty or stale slot, one at a time, until none is
// left or the filesystem is closed.
func (s *spareFS) refill() {
	defer s.fills.Done()
	s.swapMetadata()
	for {
		s.mu.Lock()
		slot, job := s.nextJobLocked()
		if slot < 0 {
			again := (s.mu.reopen || s.mu.release != nil) && !s.mu.closed
			if !again {
				s.mu.filling = false
			}
			s.mu.Unlock()
			if again {
				// A rename came while the spares were created.
				s.swapMetadata()
				continue
			}
			return
		}
		s.mu.Unlock()
		switch job {
		case jobLink:
			err := s.linkMetadata(slot)
			s.mu.Lock()
			if err != nil {
				s.mu.state[slot], s.mu.linkSlot, s.mu.noLink = spareEmpty, -1, true
			} else {
				s.mu.state[slot] = spareLinked
			}
			s.mu.Unlock()
			if err != nil {
				s.log.Error(err, "Linking metadata.json to a spare failed; spares are created instead", "slot", slot)
			}
		case jobRecycle:
			f, err := s.recycle(slot)
			s.mu.Lock()
			linked := slot == s.mu.linkSlot
			switch {
			case err == nil:
				s.mu.state[slot], s.mu.files[slot] = spareReady, f
			case errors.Is(err, errLive) && linked:
				s.mu.state[slot] = spareLinked
			default:
				_ = s.FS.Remove(s.FS.PathJoin(s.dir, spareName(slot)))
				s.mu.state[slot] = spareEmpty
			}
			if linked && s.mu.state[slot] != spareLinked {
				s.mu.linkSlot = -1
			}
			s.mu.Unlock()
			if err != nil && !(errors.Is(err, errLive) && linked) {
				s.log.Error(err, "Recycling a replaced file failed; spares are created instead", "slot", slot)
			}
		default:
			f, err := s.create(slot)
			s.mu.Lock()
			if err != nil {
				s.mu.state[slot] = spareBroken
			} else {
				s.mu.state[slot], s.mu.files[slot] = spareReady, f
			}
			s.mu.Unlock()
			if err != nil {
				s.log.Error(err, "Creating a spare file failed; commits create their files instead", "slot", slot)
			}
		}
	}
}

// create creates slot's empty spare file and returns it open for writing.
func (s *spareFS) create(slot int) (vfs.File, error) {
	path := s.FS.PathJoin(s.dir, spareName(slot))
	var f vfs.File
	var err error
	if s.raw {
		// The inode is allocated off the directory's lock, so that the
		// commit's renames do not wait for it (rawfile.CreateLinked).
		if f, err = rawfile.CreateLinked(path); errors.Is(err, iofs.ErrExist) {
			// A leftover (vfs.FS.Create replaces it too).
			_ = s.FS.Remove(path)
			f, err = rawfile.CreateLinked(path)
		}
	} else {
		f, err = s.FS.Create(path, vfs.WriteCategoryUnspecified)
	}
	if err != nil {
		return nil, fmt.Errorf("index: create spare %s: %w", path, err)
	}
	return f, nil
}

// close stops the refills, waits for the running one, and removes the
// unused spares.
func (s *spareFS) close() {
	s.mu.Lock()
	s.mu.closed = true
	s.mu.Unlock()
	s.fills.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range []vfs.File{s.mu.held, s.mu.release} {
		if f != nil {
			_ = f.Close()
		}
	}
	s.mu.held, s.mu.release = nil, nil
	for i := range s.slots {
		switch s.mu.state[i] {
		case spareReady:
			_ = s.mu.files[i].Close()
			_ = s.FS.Remove(s.FS.PathJoin(s.dir, spareName(i)))
		case spareLinked, spareReplaced, spareStale:
			// Only a name of a metadata.json (current or replaced), or an
			// adopted retired file that no generation names any more.
			_ = s.FS.Remove(s.FS.PathJoin(s.dir, spareName(i)))
		default:
			continue
		}
		s.mu.state[i], s.mu.files[i] = spareEmpty, nil
	}
	s.mu.linkSlot = -1
}

// ready returns the number of ready spares (tests).
func (s *spareFS) ready() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := range s.slots {
		if s.mu.state[i] == spareReady {
			n++
		}
	}
	return n
}
