package hostile

import (
	"fmt"
	"net/http"
	"strings"
)

// create is a class that PUTs body as a new index (admin token) and checks
// afterwards that no index was created.
func create(name, index, body string, want []answer) class {
	return class{name: name, want: want, then: notFound(index),
		req: get(request{method: http.MethodPut, path: indexPath(index, ""), body: []byte(body)})}
}

// fieldsBody wraps field objects into a creation body.
func fieldsBody(fields string) string { return `{"schema":{"fields":[` + fields + `]}}` }

// malformedSchema allows the two codes of a body that is not even JSON.
var malformedSchema = either(badSchema, badRequest)

// schemaClasses are malformed, mistyped and null-laden schemas, and a
// creation that collides with the baseline.
func schemaClasses() []class {
	pk := `{"name":"id","type":"keyword","primary":true}`
	var many []string
	for i := 0; i < 300; i++ {
		many = append(many, fmt.Sprintf(`{"name":"f%d","type":"text"}`, i))
	}
	return []class{
		create("schema: truncated body", "hx-s1", `{"schema":{"fields":[{"name":"id","ty`, malformedSchema),
		create("schema: not JSON at all", "hx-s2", `fields: id keyword`, malformedSchema),
		create("schema: body is an array", "hx-s3", `[`+pk+`]`, malformedSchema),
		create("schema: empty body", "hx-s4", ``, malformedSchema),
		create("schema: JSON nested 100000 deep", "hx-s0", `{"schema":`+strings.Repeat("[", 100000)+strings.Repeat("]", 100000)+`}`, malformedSchema),
		create("schema: schema is null", "hx-s5", `{"schema":null}`, badSchema),
		create("schema: schema is a string", "hx-s6", `{"schema":"keyword"}`, badSchema),
		create("schema: fields is null", "hx-s7", `{"schema":{"fields":null}}`, badSchema),
		create("schema: fields is empty", "hx-s8", fieldsBody(``), badSchema),
		create("schema: fields is an object", "hx-s9", `{"schema":{"fields":{"id":"keyword"}}}`, badSchema),
		create("schema: a null field", "hx-s10", fieldsBody(pk+`,null`), badSchema),
		create("schema: field name is null", "hx-s11", fieldsBody(pk+`,{"name":null,"type":"text"}`), badSchema),
		create("schema: field name is a number", "hx-s12", fieldsBody(pk+`,{"name":5,"type":"text"}`), badSchema),
		create("schema: field name of 10000 characters", "hx-s13", fieldsBody(pk+`,{"name":"`+strings.Repeat("f", 10000)+`","type":"text"}`), badSchema),
		create("schema: field name with a slash", "hx-s14", fieldsBody(pk+`,{"name":"../etc","type":"text"}`), badSchema),
		create("schema: field type is null", "hx-s15", fieldsBody(pk+`,{"name":"t","type":null}`), badSchema),
		create("schema: unknown field type", "hx-s16", fieldsBody(pk+`,{"name":"t","type":"blob"}`), badSchema),
		create("schema: unknown field option", "hx-s17", fieldsBody(pk+`,{"name":"t","type":"text","analyzer":"evil"}`), badSchema),
		create("schema: unknown top-level member", "hx-s18", `{"schema":{"fields":[`+pk+`],"settings":{}}}`, badSchema),
		create("schema: dims is null", "hx-s19", fieldsBody(pk+`,{"name":"v","type":"dense_vector","dims":null}`), badSchema),
		create("schema: dims is a string", "hx-s20", fieldsBody(pk+`,{"name":"v","type":"dense_vector","dims":"4"}`), badSchema),
		create("schema: dims is negative", "hx-s21", fieldsBody(pk+`,{"name":"v","type":"dense_vector","dims":-4}`), badSchema),
		create("schema: dims is zero", "hx-s22", fieldsBody(pk+`,{"name":"v","type":"dense_vector","dims":0}`), badSchema),
		create("schema: dims is fractional", "hx-s23", fieldsBody(pk+`,{"name":"v","type":"dense_vector","dims":4.5}`), badSchema),
		create("schema: dims of a billion", "hx-s24", fieldsBody(pk+`,{"name":"v","type":"dense_vector","dims":1000000000}`), badSchema),
		create("schema: dims past int64", "hx-s25", fieldsBody(pk+`,{"name":"v","type":"dense_vector","dims":1e30}`), badSchema),
		create("schema: dims on a text field", "hx-s26", fieldsBody(pk+`,{"name":"t","type":"text","dims":4}`), badSchema),
		create("schema: multi-valued vector", "hx-s27", fieldsBody(pk+`,{"name":"v","type":"sparse_vector","multi":true}`), badSchema),
		create("schema: two primary keys", "hx-s28", fieldsBody(pk+`,{"name":"id2","type":"keyword","primary":true}`), badSchema),
		create("schema: f64 primary key", "hx-s29", fieldsBody(`{"name":"id","type":"f64","primary":true}`), badSchema),
		create("schema: primary flag as a string", "hx-s30", fieldsBody(`{"name":"id","type":"keyword","primary":"yes"}`), badSchema),
		create("schema: duplicate field names", "hx-s31", fieldsBody(pk+`,{"name":"t","type":"text"},{"name":"t","type":"u64"}`), badSchema),
		create("schema: 300 fields", "hx-s32", fieldsBody(strings.Join(many, ",")), badSchema),
		create("schema: members beside schema", "hx-s33", `{"schema":{"fields":[`+pk+`]},"drop":"base"}`, either(badSchema, badRequest)),
		{name: "schema: the baseline's name with another schema", want: []answer{{409, "IndexExists"}},
			req: get(request{method: http.MethodPut, path: indexPath(baseIndex, ""), body: []byte(fieldsBody(pk))})},
		{name: "schema: the baseline's name with its own schema again", want: okay,
			req: get(request{method: http.MethodPut, path: indexPath(baseIndex, ""), body: []byte(`{"schema":` + baseSchema + `}`)})},
	}
}

// maintain is a class that POSTs body to a maintenance endpoint of the
// baseline index with the admin token.
func maintain(name, op, body string, want []answer) class {
	return class{name: name, want: want, req: get(request{method: http.MethodPost, path: indexPath(baseIndex, op), body: []byte(body)})}
}

// maintenanceClasses are bad bodies of merge, reorder and compact.
func maintenanceClasses() []class {
	return []class{
		maintain("merge: truncated body", "merge", `{"maxSegments":`, badRequest),
		maintain("merge: body is an array", "merge", `[1]`, badRequest),
		maintain("merge: maxSegments as a string", "merge", `{"maxSegments":"1"}`, badRequest),
		maintain("merge: negative maxSegments", "merge", `{"maxSegments":-5}`, badRequest),
		maintain("merge: fractional maxSegments", "merge", `{"maxSegments":1.5}`, badRequest),
		maintain("merge: maxSegments past int64", "merge", `{"maxSegments":1e30}`, badRequest),
		maintain("merge: unknown member", "merge", `{"maxSegments":1,"force":true}`, badRequest),
		maintain("reorder: body of garbage", "reorder", `garbage`, badRequest),
		maintain("compact: unknown member", "compact", `{"everything":true}`, badRequest),
		{name: "merge: a missing index", want: []answer{{404, "IndexNotFound"}},
			req: get(request{method: http.MethodPost, path: indexPath("nope", "merge"), body: []byte(`{}`)})},
		maintain("merge: a well-formed merge of the baseline", "merge", `{"maxSegments":1}`, okay),
		maintain("compact: a well-formed compaction of the baseline", "compact", ``, okay),
	}
}
