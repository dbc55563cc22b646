// Package search parses queries and runs them over a set of segments.
//
// A query is either a string in the small text query language (bare terms
// ORed together and scored with BM25, "+must", "-not", "field:term" and
// "quoted phrases") or a JSON object asking for a dense or sparse vector
// search. Search executes a query over segment views, each with its own
// deletion mask, and returns the exact number of matching live documents
// with the requested page of the best hits.
//
// Text scores use collection statistics summed over all views, so a
// document's score does not depend on how the collection is split into
// segments. Ties are broken by view index, then document id, so results
// are deterministic.
package search
