package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/internal/strictjson"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/search"
)

// searchBody is the body of a search request, client.SearchRequest, read
// with its query kept as raw JSON: the engine parses the query itself
// (a string in the query language or a vector-query object). Query comes
// first so that it, not the embedded any, takes the member "query" (in
// encoding/json the shallower field wins; strictjson takes the first).
type searchBody struct {
	// Query is the "query" member as sent.
	Query json.RawMessage `json:"query"`
	client.SearchRequest
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
	out := client.SearchResult{TotalHits: res.TotalHits, Hits: make([]client.Hit, len(res.Hits))}
	if res.TotalHitsRelation == search.AtLeast {
		out.TotalHitsRelation = res.TotalHitsRelation.String()
	}
	for i, hit := range res.Hits {
		fields := hit.Fields
		if len(fields) == 0 {
			fields = json.RawMessage(`{}`)
		}
		out.Hits[i] = client.Hit{Score: hit.Score, Fields: fields}
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
	return search.Request{Query: body.Query, Limit: body.Limit, Offset: body.Offset,
		TotalHitsThreshold: body.TotalHitsThreshold, CountOnly: body.CountOnly}, nil
}
