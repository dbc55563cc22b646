package s3backup

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
)

// ManifestFormat is the manifest format this version writes and reads.
const ManifestFormat = 1

// Manifest is one backup: written last, it is what makes the backup exist.
type Manifest struct {
	// Format is ManifestFormat.
	Format int `json:"format"`
	// ID names the backup (see NewID).
	ID string `json:"id"`
	// Index is the backed-up index's name.
	Index string `json:"index"`
	// Generation is the backed-up metadata generation.
	Generation uint64 `json:"generation"`
	// Documents counts the generation's live documents.
	Documents uint64 `json:"documents"`
	// EngineVersion is the version of the engine that wrote the backup.
	EngineVersion string `json:"engineVersion"`
	// StartedAt and CompletedAt bound the backup's upload.
	StartedAt   time.Time `json:"startedAt"`
	CompletedAt time.Time `json:"completedAt"`
	// Bytes is what this backup uploaded (file objects, not the manifest);
	// ReusedBytes what it found in the bucket already. Their sum is the
	// size of the backed-up files.
	Bytes       int64 `json:"bytes"`
	ReusedBytes int64 `json:"reusedBytes"`
	// Metadata is the generation's metadata.json, as the engine encodes it.
	Metadata json.RawMessage `json:"metadata"`
	// Files are every file the metadata names.
	Files []File `json:"files"`
}

// File is one backed-up file.
type File struct {
	// Name is the file's name in the index directory.
	Name string `json:"name"`
	// Size is its size in bytes.
	Size int64 `json:"size"`
	// SHA256 is the lowercase hex SHA-256 of its content.
	SHA256 string `json:"sha256"`
	// Key is the object's key in the bucket.
	Key string `json:"key"`
}

// TotalBytes is the size of every backed-up file.
func (m *Manifest) TotalBytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// idPattern is the form of backup IDs: the start time in UTC to the
// millisecond, then 8 random hex digits. IDs sort by time.
var idPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{8}$`)

// NewID returns a new backup ID for a backup starting at t.
func NewID(t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

// ValidID reports whether id has the form of a backup ID.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// ErrInvalidID: the string cannot be a backup ID.
var ErrInvalidID = errors.New("s3backup: invalid backup ID (want YYYYMMDDTHHMMSS.mmmZ-xxxxxxxx)")

// ErrNotFound: no manifest of that ID (or no backup at all, for the
// newest) is in the bucket.
var ErrNotFound = errors.New("s3backup: backup not found")

// layout computes the keys of one store.
type layout struct{ prefix string }

func newLayout(prefix string) layout { return layout{prefix: strings.Trim(prefix, "/")} }

func (l layout) join(parts ...string) string {
	if l.prefix != "" {
		parts = append([]string{l.prefix}, parts...)
	}
	return path.Join(parts...)
}

// fileKey is the object of a file with that name and checksum.
func (l layout) fileKey(index, name, sha string) string {
	return l.join(index, "files", name+"-"+sha)
}

// filesPrefix is the prefix of every file object of an index.
func (l layout) filesPrefix(index string) string { return l.join(index, "files") + "/" }

// manifestKey is the manifest of a backup.
func (l layout) manifestKey(index, id string) string { return l.join(index, "backups", id+".json") }

// manifestsPrefix is the prefix of every manifest of an index.
func (l layout) manifestsPrefix(index string) string { return l.join(index, "backups") + "/" }

// idOfManifestKey returns the backup ID of a manifest key, or "".
func (l layout) idOfManifestKey(index, key string) string {
	rest, ok := strings.CutPrefix(key, l.manifestsPrefix(index))
	if !ok {
		return ""
	}
	id, ok := strings.CutSuffix(rest, ".json")
	if !ok || !ValidID(id) {
		return ""
	}
	return id
}

// decodeManifest reads and checks a manifest.
func decodeManifest(data []byte, index, id string) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("s3backup: manifest %s of index %s: %w", id, index, err)
	}
	switch {
	case m.Format != ManifestFormat:
		return nil, fmt.Errorf("s3backup: manifest %s of index %s: format %d, this engine reads %d", id, index, m.Format, ManifestFormat)
	case m.ID != id || m.Index != index:
		return nil, fmt.Errorf("s3backup: manifest %s of index %s names backup %q of index %q", id, index, m.ID, m.Index)
	case len(m.Metadata) == 0:
		return nil, fmt.Errorf("s3backup: manifest %s of index %s has no metadata", id, index)
	}
	return &m, nil
}
