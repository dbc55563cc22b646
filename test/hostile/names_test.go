package hostile

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// refusal is any answer that does nothing: a redirect the client need not
// follow or a client error, never a 2xx or a 5xx.
var refusal = []answer{{301, ""}, {307, ""}, {308, ""}, {400, ""}, {401, ""}, {403, ""}, {404, ""}, {405, ""}, {414, ""}, {431, ""}}

// validSchema is a small creation body.
const validSchema = `{"schema":{"fields":[{"name":"id","type":"keyword","primary":true}]}}`

// named is a class that sends method to /v1/indexes/RAW[/suffix], RAW
// sent verbatim (already escaped), with a valid body for the route.
func named(name, method, raw, suffix string, want []answer) class {
	path := "/v1/indexes/" + raw
	if suffix != "" {
		path += "/" + suffix
	}
	body := map[string]string{"PUT": validSchema, "POST documents": `{"id":"evil","tag":"base"}`, "POST search": `{"query":"light"}`}[strings.TrimSpace(method+" "+suffix)]
	r := request{method: method, path: path}
	if body != "" {
		r.body = []byte(body)
	}
	return class{name: name, want: want, req: get(r)}
}

// nameClasses are index names at and past the DNS-1123 rule: 253
// characters, uppercase, dots, dashes, unicode, encoded slashes, NUL and
// traversal. Each invalid name is InvalidIndexName 400, on every route.
func nameClasses() []class {
	return []class{
		class{name: "name: 253 characters is valid and deletes cleanly", run: longName},
		named("name: 254 characters", "PUT", strings.Repeat("a", 254), "", badName),
		named("name: 254 characters with dots", "PUT", strings.Repeat("abcdefgh.", 28)+"ab", "", badName),
		named("name: 10000 characters", "PUT", strings.Repeat("a", 10000), "", badName),
		named("name: uppercase", "PUT", "Hostile", "", badName),
		named("name: the baseline in uppercase, deleted", "DELETE", "BASE", "", badName),
		named("name: empty label", "PUT", "a..b", "", badName),
		named("name: leading dot", "PUT", ".hidden", "", badName),
		named("name: the baseline with a trailing dot, deleted", "DELETE", "base.", "", badName),
		named("name: leading dash", "PUT", "-rf", "", badName),
		named("name: trailing dash", "PUT", "a-", "", badName),
		named("name: label ending in a dash", "PUT", "a-.b", "", badName),
		named("name: underscore", "PUT", "seg_1", "", badName),
		named("name: unicode", "PUT", "%C3%BCnic%C3%B6de", "", badName),
		named("name: homoglyph of the baseline, deleted", "DELETE", "b%D0%B0se", "", badName),
		named("name: encoded slash", "PUT", "a%2Fb", "", badName),
		named("name: encoded traversal to the baseline, deleted", "DELETE", "..%2Fbase", "", badName),
		named("name: encoded traversal out of the data directory", "PUT", "..%2F..%2F..%2Ftmp%2Fhostile", "", badName),
		named("name: encoded backslash", "PUT", "a%5Cb", "", badName),
		named("name: encoded NUL", "PUT", "a%00b", "", badName),
		named("name: encoded space", "PUT", "a%20b", "", badName),
		named("name: encoded newline", "PUT", "a%0Ab", "", badName),
		named("name: encoded dot", "PUT", "%2e", "", either(badName, refusal)),
		named("name: encoded dot-dot", "PUT", "%2e%2e", "", either(badName, refusal)),
		named("name: a data directory internal", "PUT", ".summa-trash-base", "", badName),
		named("name: invalid name on search", "POST", "Base", "search", badName),
		named("name: invalid name on ingestion", "POST", "a_b", "documents", badName),
		named("name: invalid name on status", "GET", "a..b", "", badName),
		named("name: 10000 characters on commit", "POST", strings.Repeat("b", 10000), "commit", badName),
	}
}

// longName creates an index of a 253-character name (valid), uses it,
// deletes it, waits until it is gone from the API and the data directory,
// and does it all again: a deletion must finish, and a deleted name must
// be reusable without a leftover marker that a restart would act on.
func longName(e *env) error {
	name := strings.Repeat("l", 120) + "." + strings.Repeat("n", 132)
	for round := 1; round <= 2; round++ {
		steps := []struct {
			r    request
			want int
		}{
			{request{method: http.MethodPut, path: indexPath(name, ""), body: []byte(validSchema)}, http.StatusCreated},
			{request{method: http.MethodPost, path: indexPath(name, "documents"), body: []byte(`{"id":"x"}`), as: asWrite}, http.StatusOK},
			{request{method: http.MethodPost, path: indexPath(name, "commit"), as: asWrite}, http.StatusOK},
			{request{method: http.MethodPost, path: indexPath(name, "search"), body: []byte(`{"query":"id:x"}`), as: asRead}, http.StatusOK},
			{request{method: http.MethodDelete, path: indexPath(name, "")}, http.StatusAccepted},
		}
		for _, s := range steps {
			r, err := e.send(s.r)
			if err != nil {
				return err
			}
			if r.Status != s.want {
				return fmt.Errorf("round %d: %s %s: got %s, want %d", round, s.r.method, clip(s.r.path, 60), r, s.want)
			}
		}
		if err := waitGone(e, name); err != nil {
			return fmt.Errorf("round %d: %v", round, err)
		}
	}
	return nil
}

// waitGone waits until GET answers 404 for name and nothing of it is left
// in the data directory.
func waitGone(e *env, name string) error {
	deadline := time.Now().Add(waitBound)
	for {
		r, err := e.send(request{method: http.MethodGet, path: indexPath(name, ""), as: asRead})
		left := leftovers(e.dataDir, name)
		if err == nil && r.Status == http.StatusNotFound && len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("deleted index %s: %v", clip(name, 40), err)
			}
			return fmt.Errorf("deleted index %s: after %v GET answers %d and the data directory still holds %v",
				clip(name, 40), waitBound, r.Status, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leftovers lists what the data directory holds of index name: its
// directory (with its files) or a trash directory naming it.
func leftovers(dataDir, name string) []string {
	entries, _ := os.ReadDir(dataDir)
	var out []string
	for _, en := range entries {
		if en.Name() == name || strings.Contains(en.Name(), name[:min(len(name), 40)]) {
			files, _ := os.ReadDir(filepath.Join(dataDir, en.Name()))
			var names []string
			for _, f := range files {
				names = append(names, f.Name())
			}
			out = append(out, fmt.Sprintf("%s/ %v", clip(en.Name(), 40), names))
		}
	}
	return out
}

// pathClasses are path tricks: dot segments, double slashes, encoded
// traversal, odd methods and targets. None may reach a route it does not
// name, and a token's scope holds wherever a redirect points.
func pathClasses() []class {
	drain := func(name, path string, as scope) class {
		return class{name: name, want: refusal, then: notDraining, req: get(request{method: http.MethodPost, path: path, as: as})}
	}
	return []class{
		drain("path: ../admin/drain with the admin token", "/v1/indexes/../admin/drain", asAdmin),
		{name: "path: ../admin/drain followed like a naive client with the write token", run: followRedirects},
		drain("path: double slash before v1", "//v1/admin/drain", asWrite),
		drain("path: double slash inside", "/v1//admin/drain", asWrite),
		drain("path: dot segments through an index", "/v1/indexes/base/../../admin/drain", asWrite),
		drain("path: encoded dot segments with the admin token", "/v1/indexes/%2e%2e/admin/drain", asAdmin),
		drain("path: encoded slash traversal with the admin token", "/v1/indexes/..%2Fadmin/drain", asAdmin),
		drain("path: encoded slash in the admin path", "/v1/admin%2Fdrain", asAdmin),
		drain("path: backslash traversal", `/v1/indexes/base\..\..\admin\drain`, asAdmin),
		drain("path: trailing slash on drain", "/v1/admin/drain/", asAdmin),
		drain("path: uppercase route", "/V1/ADMIN/DRAIN", asAdmin),
		drain("path: encoded hash in the route", "/v1/admin/drain%23x", asAdmin),
		{name: "path: query string asking for admin with the write token", want: forbidden, then: notDraining,
			req: get(request{method: http.MethodPost, path: "/v1/admin/drain?scope=admin&token=admin", as: asWrite})},
		{name: "path: absolute-form target with the write token", want: forbidden, then: notDraining,
			req: func(e *env) request {
				return request{method: http.MethodPost, path: "https://evil.example/v1/admin/drain", as: asWrite}
			}},
		{name: "path: index deletion through a dot segment", want: refusal,
			req: get(request{method: http.MethodDelete, path: "/v1/indexes/base/.."})},
		{name: "path: index deletion through a leading dot segment", want: refusal,
			req: get(request{method: http.MethodDelete, path: "/v1/indexes/./base"})},
		{name: "path: index deletion with an encoded dot-dot suffix", want: badName,
			req: get(request{method: http.MethodDelete, path: "/v1/indexes/base%2F.."})},
		{name: "path: semicolon parameter", want: badName,
			req: get(request{method: http.MethodPost, path: "/v1/indexes/base;/commit", as: asWrite})},
		{name: "path: wrong method on an index", want: []answer{{405, "MethodNotAllowed"}},
			req: get(request{method: "PATCH", path: "/v1/indexes/base", body: []byte(`{}`)})},
		{name: "path: GET on documents", want: []answer{{405, "MethodNotAllowed"}},
			req: get(request{method: http.MethodGet, path: "/v1/indexes/base/documents"})},
		{name: "path: HEAD on search", want: []answer{{405, ""}},
			req: get(request{method: http.MethodHead, path: "/v1/indexes/base/search", as: asRead})},
		{name: "path: unknown route under an index", want: []answer{{404, "NotFound"}},
			req: get(request{method: http.MethodPost, path: "/v1/indexes/base/explode", as: asRead})},
		{name: "path: 4000 segments", want: []answer{{404, "NotFound"}},
			req: get(request{method: http.MethodGet, path: "/v1/indexes/base/" + strings.Repeat("a/", 4000), as: asRead})},
		{name: "path: URL of 1 MiB", want: []answer{{431, ""}, {414, ""}},
			req: get(request{method: http.MethodGet, path: "/v1/indexes/" + strings.Repeat("a", 1<<20), as: asRead})},
		{name: "path: OPTIONS from another origin", want: []answer{{405, ""}, {403, "Forbidden"}}, then: notDraining,
			req: get(request{method: http.MethodOptions, path: "/v1/admin/drain", header: map[string]string{"Origin": "http://evil.example"}})},
	}
}

// followRedirects posts to /v1/indexes/../admin/drain with the write token
// and follows every redirect with the same method, body and token, as a
// careless client would: the chain must end refused (403), never drained.
func followRedirects(e *env) error {
	path := "/v1/indexes/../admin/drain"
	for hop := 0; hop < 5; hop++ {
		r, err := e.send(request{method: http.MethodPost, path: path, body: []byte(`{}`), as: asWrite})
		if err != nil {
			return err
		}
		if r.Status < 300 || r.Status > 399 {
			if r.Status != http.StatusForbidden {
				return fmt.Errorf("POST %s with the write token (hop %d): got %s, want 403 Forbidden", path, hop, r)
			}
			return notDraining(e)
		}
		loc, err := url.Parse(r.Header.Get("Location"))
		if err != nil || loc.Path == "" {
			return fmt.Errorf("POST %s: redirect %d without a usable Location: %q", path, r.Status, r.Header.Get("Location"))
		}
		path = loc.EscapedPath()
	}
	return errors.New("more than 5 redirects")
}

// dataDirEntries lists the top level of the data directory.
func dataDirEntries(dir string) map[string]bool {
	entries, _ := os.ReadDir(dir)
	out := map[string]bool{}
	for _, en := range entries {
		out[en.Name()] = true
	}
	return out
}

// dirsChanged compares two listings of the data directory.
func dirsChanged(before, after map[string]bool) string {
	var diffs []string
	for n := range after {
		if !before[n] {
			diffs = append(diffs, "gained "+clip(n, 60))
		}
	}
	for n := range before {
		if !after[n] {
			diffs = append(diffs, "lost "+clip(n, 60))
		}
	}
	return strings.Join(diffs, ", ")
}
