package index

// A follower catching up copies a whole index it has not served yet (a new
// follower, one back from a long absence, a large merge on the leader).
// Each page it writes is a new page of the page cache: on a virtual
// machine whose free memory goes back to the host (free page reporting),
// the first touch of such a page is a fault in the host, and writing a
// gigabyte of new pages cost 1.5 to 1.9 CPU ms per MiB on the machines
// the catch-up is measured on, against 0.2 to 0.4 when the pages were
// freed a moment before. A copy of at least dropBehindBytes therefore
// drops the pages of each segment behind it, once the segment is
// validated (Check): their writeback is waited for and the pages
// released, so the next files reuse them, as `dd oflag=nocache` and
// `rsync --drop-cache` do. The copy then neither fills the page cache nor
// charges the pod's memory for an index it does not serve yet; the price
// is that the first searches after a large catch-up read from the disk.
// Check then opens the segment at once (segment.ReaderOptions.DroppedPages):
// the open reads only the pages it touches, where a cold fault would read
// ahead as much as the device says (8 MiB on the bench machine, the whole
// segment), and Publish no longer opens, and so reads back, every segment
// one after the other at the end of the copy.
// Smaller copies, the steady state of following, keep their pages: the
// next searches read them.

// dropBehindBytes is the size of a copy from which it drops its pages
// behind it; tests lower it.
var dropBehindBytes int64 = 256 << 20

// dropPagesOf drops the page cache pages of the named files of the
// incoming generation (see dropPages); a file that cannot be opened is
// skipped (Publish reports it if it matters).
func (in *Incoming) dropPagesOf(names []string) {
	for _, name := range names {
		f, err := in.idx.fs.Open(in.idx.fs.PathJoin(in.idx.dir, name))
		if err != nil {
			continue
		}
		dropPages(f)
		_ = f.Close()
	}
}
