// Package hostile is the adversarial test suite of the real summa-server
// binary (issue 12). One server process, started with admin, write and
// read token files, TLS (a certificate from internal/pki) and short
// timeouts, holds a baseline index of real text; then more than 60
// classes of bad or hostile input run against it, one after another:
// malformed and mistyped bodies, nulls, NaN and huge numbers, sizes and
// names at and past every limit, path tricks, query abuse, slow and
// endless clients, connection floods, concurrent drain and deletion,
// wrong tokens and scopes, TLS mistakes and cross-origin posts.
//
// The engine's documented outside (docs/server.md) is the judge. After
// every class the suite checks that the answer was the contract's (status
// and error code; 503 with Retry-After; 401 with WWW-Authenticate), that
// the server is still healthy (/healthz and an authorized search), that
// its log shows no panic, and that the committed baseline is unchanged
// (document count and every stored field). It ends with one line:
//
//	hostile input: P/N classes handled, panics: X, 5xx: Y, data changed: Z
//
// The tests are in the _test.go files, by theme: auth (tokens, scopes,
// TLS, origins), bodies (documents, schemas, maintenance bodies, sizes),
// queries, names (index names and paths) and slow (slow, endless and
// concurrent clients).
package hostile
