package server

import (
	"errors"
	"net/http"

	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/registry"
)

// pinCommitted pins the committed generation of idx for a copy that
// outlives the request (a backup's upload, a follower's download). On
// failure it releases h; a quarantined source answers 409
// SourceQuarantined, its message ending with what to do about it (todo).
func pinCommitted(h *registry.Handle, idx *index.Index, todo string) (*index.Snapshot, *metadata.Metadata, error) {
	snap, meta, err := idx.PinCommitted()
	if err != nil {
		h.Release()
		if errors.Is(err, index.ErrQuarantined) {
			return nil, nil, newError(http.StatusConflict, CodeSourceQuarantined, "%v: %s", err, todo)
		}
		return nil, nil, err
	}
	return snap, meta, nil
}
