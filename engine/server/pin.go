package server

import (
	"errors"
	"net/http"

	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/registry"
)

// opened returns the handle an Acquire returned (h, err) with its open
// index; when either fails, nothing stays acquired.
func opened(h *registry.Handle, err error) (*registry.Handle, *index.Index, error) {
	if err != nil {
		return nil, nil, err
	}
	idx, err := h.Index()
	if err != nil {
		h.Release()
		return nil, nil, err
	}
	return h, idx, nil
}

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
