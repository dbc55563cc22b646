// Package segtest damages an engine's index directory on purpose, for tests
// of quarantine and the doctor (envtest and end-to-end).
package segtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// TruncateFirstSegmentFile cuts the first (by name) segment data file of an
// index directory in half, so that its footer is gone and the next open
// quarantines the segment, and returns the segment's ID.
func TruncateFirstSegmentFile(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("segtest: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "seg_") && !strings.HasSuffix(e.Name(), ".del") && strings.Contains(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("segtest: no segment file in %s", dir)
	}
	sort.Strings(names)
	path := filepath.Join(dir, names[0])
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("segtest: %w", err)
	}
	if err := os.Truncate(path, info.Size()/2); err != nil {
		return "", fmt.Errorf("segtest: %w", err)
	}
	id := strings.TrimPrefix(names[0], "seg_")
	return id[:strings.IndexByte(id, '.')], nil
}

// TruncateEverySegment cuts, for every segment of an index directory, its
// first (by name) data file in half, as TruncateFirstSegmentFile does for
// one, and returns the damaged segments' IDs sorted by name.
func TruncateEverySegment(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("segtest: %w", err)
	}
	first := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "seg_") || strings.HasSuffix(name, ".del") || !strings.Contains(name, ".") {
			continue
		}
		id := strings.TrimPrefix(name, "seg_")
		id = id[:strings.IndexByte(id, '.')]
		if cur, ok := first[id]; !ok || name < cur {
			first[id] = name
		}
	}
	ids := make([]string, 0, len(first))
	for id, name := range first {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("segtest: %w", err)
		}
		if err := os.Truncate(path, info.Size()/2); err != nil {
			return nil, fmt.Errorf("segtest: %w", err)
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}
