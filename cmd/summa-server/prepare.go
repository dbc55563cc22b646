package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// prepareUsage is the prepare-volume command's usage line.
const prepareUsage = "summa-server prepare-volume --data-dir DIR --uid N --gid N"

// runPrepareVolume hands a volume to the engine's user: the data directory
// and everything in it are chowned to uid:gid and made user-writable. It
// is meant for an init container running as root with only the CHOWN and
// FOWNER capabilities, for volumes (hostPath, some local provisioners)
// that the kubelet does not give to the pod's fsGroup. Entries already
// owned are left alone, so a second run changes nothing.
func runPrepareVolume(args []string, stdout, stderr io.Writer) int {
	fset := commandFlags("summa-server prepare-volume",
		"Usage:\n  "+prepareUsage+"\n\nChowns DIR and its contents to uid:gid (for an init container).\n\nFlags:\n", stderr)
	dir := fset.String("data-dir", "", "the volume's mount point (required)")
	uid := fset.Int("uid", -1, "owner user id (required)")
	gid := fset.Int("gid", -1, "owner group id (required)")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *dir == "" || *uid < 0 || *gid < 0 || fset.NArg() > 0 {
		fmt.Fprintf(stderr, "summa-server: usage: %s\n", prepareUsage)
		return exitUsage
	}
	changed, err := chownTree(*dir, *uid, *gid)
	if err != nil {
		fmt.Fprintf(stderr, "summa-server: prepare-volume: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "{\"dataDir\":%q,\"uid\":%d,\"gid\":%d,\"changed\":%d}\n", *dir, *uid, *gid, changed)
	return exitOK
}

// chownTree gives root and everything under it to uid:gid, with the owner
// able to read, write and enter; symbolic links are not followed. It
// returns how many entries changed.
func chownTree(root string, uid, gid int) (int, error) {
	changed := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no ownership information", path)
		}
		if int(st.Uid) != uid || int(st.Gid) != gid {
			if err := os.Lchown(path, uid, gid); err != nil {
				return fmt.Errorf("chown %s: %w", path, err)
			}
			changed++
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return nil
		}
		want := info.Mode().Perm() | 0o600
		if d.IsDir() {
			want |= 0o700
		}
		if want != info.Mode().Perm() {
			if err := os.Chmod(path, want); err != nil {
				return fmt.Errorf("chmod %s: %w", path, err)
			}
		}
		return nil
	})
	return changed, err
}
