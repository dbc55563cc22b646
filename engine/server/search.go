package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/summadev/summa/engine/internal/strictjson"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/search"
)

// searchBody is the body of a search request.
type searchBody struct {
	// Query is a JSON string in the query language or a vector-query object.
	Query json.RawMessage `json:"query"`
	// Limit is the page size (default 10).
	Limit int `json:"limit"`
	// Offset skips the best hits before the page.
	Offset int `json:"offset"`
	// TotalHitsThreshold lets totalHits become a lower bound once it
	// reaches the threshold (search.Request.TotalHitsThreshold); 0 or absent
	// keeps it exact.
	TotalHitsThreshold int `json:"totalHitsThreshold"`
}

// SearchAnswer is the answer of a search.
type SearchAnswer struct {
	// TotalHits is the number of live documents that match.
	TotalHits int `json:"totalHits"`
	// TotalHitsRelation is "gte" when totalHits is a lower bound; absent
	// when it is exact.
	TotalHitsRelation string `json:"totalHitsRelation,omitempty"`
	// Hits is the requested page, best first (never null).
	Hits []SearchHit `json:"hits"`
}

// SearchHit is one returned document.
type SearchHit struct {
	// Score is BM25 for text queries, the dot product for vector queries.
	Score float64 `json:"score"`
	// Fields are the document's stored fields.
	Fields json.RawMessage `json:"fields"`
}

// search runs a query over the index's current snapshot. A refused query,
// limit or offset answers 400 InvalidQuery; a malformed body 400
// BadRequest.
func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	h, err := s.acquire(r)
	if err != nil {
		return err
	}
	defer h.Release()
	req, err := s.readSearch(w, r)
	if err != nil {
		return err
	}
	idx, err := h.Index()
	if err != nil {
		return fmt.Errorf("index %q: %w", h.Name(), err)
	}
	snap, err := idx.Snapshot()
	if err != nil {
		return fmt.Errorf("index %q: snapshot: %w", h.Name(), err)
	}
	defer snap.Close()
	// The search stops when the client goes away or the deletion starts.
	ctx, cancel := h.Context(r.Context())
	defer cancel()
	res, err := snap.Search(ctx, req)
	if err != nil {
		select {
		case <-h.Done():
			err = registry.ErrIndexDeleting
		default:
		}
		return fmt.Errorf("index %q: search: %w", h.Name(), err)
	}
	out := SearchAnswer{TotalHits: res.TotalHits, Hits: make([]SearchHit, len(res.Hits))}
	if res.TotalHitsRelation == search.AtLeast {
		out.TotalHitsRelation = res.TotalHitsRelation.String()
	}
	for i, hit := range res.Hits {
		fields := hit.Fields
		if len(fields) == 0 {
			fields = json.RawMessage(`{}`)
		}
		out.Hits[i] = SearchHit{Score: hit.Score, Fields: fields}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// readSearch reads and checks a search body. Mistyped members (a string,
// a fraction or an out-of-range number for limit or offset), null members
// ("limit":null is not the default) and members given twice are
// InvalidQuery; malformed JSON and unknown members are BadRequest.
func (s *Server) readSearch(w http.ResponseWriter, r *http.Request) (search.Request, error) {
	var body searchBody
	if err := decodeBody(w, r, s.limits.MaxSearchBytes, false, &body); err != nil {
		var te *json.UnmarshalTypeError
		var se *strictjson.Error
		switch {
		case errors.As(err, &te):
			return search.Request{}, newError(http.StatusBadRequest, CodeInvalidQuery,
				"%q must be %s, got a JSON %s", te.Field, te.Type, te.Value)
		case errors.As(err, &se) && (se.Kind == strictjson.Null || se.Kind == strictjson.Duplicate):
			return search.Request{}, newError(http.StatusBadRequest, CodeInvalidQuery, "%v", se)
		}
		return search.Request{}, err
	}
	if err := checkQuerySize(body.Query, s.limits.MaxQueryBytes); err != nil {
		return search.Request{}, err
	}
	return search.Request{Query: body.Query, Limit: body.Limit, Offset: body.Offset, TotalHitsThreshold: body.TotalHitsThreshold}, nil
}
