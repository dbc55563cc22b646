package metadata

import (
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

// TestEncodeStringEdges: appendString writes what json.Marshal writes for
// strings made only of one character of each class it must escape (a
// control, U+2028, invalid UTF-8, a quote, a backslash, <, >, &), of the
// printable ASCII at the edges of its plain range, and of each mixed with
// plain text, so that every test of its plain-byte check decides.
func TestEncodeStringEdges(t *testing.T) {
	for _, s := range []string{
		"\x00", "\x1f", "\u2028", "\xff", "\xff\xfe", "é", `"`, `\`, "<", ">", "&", "\x7f", "~", " ", "!", "",
		"a\x00", "a\u2028", "a\xff", `a"`, `a\`, "a<", "a>", "a&", "<\"&>",
	} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

// TestDecodeFastIntegerLimits: each integer member is read up to the
// largest value of its Go type and declined one past it, so that the
// reference refuses the text (TestDecodeRefusesCoercions) instead of a
// wrapped value being read.
func TestDecodeFastIntegerLimits(t *testing.T) {
	good := encode(t, fullSample())
	for _, c := range []struct {
		from, max, over string
	}{
		{`"generation":7`, `"generation":18446744073709551615`, `"generation":18446744073709551616`},
		{`"version":1`, `"version":9223372036854775807`, `"version":9223372036854775808`},
		{`"documents":300`, `"documents":4294967295`, `"documents":4294967296`},
		{`"size":717115`, `"size":9223372036854775807`, `"size":9223372036854775808`},
		{`"size":717115`, `"size":0`, `"size":00`},
		{`"deleted":3`, `"deleted":4294967295`, `"deleted":4294967296`},
		{`"runs":2`, `"runs":9223372036854775807`, `"runs":9223372036854775808`},
		{`"vectors":17`, `"vectors":4294967295`, `"vectors":4294967296`},
		{`"pendingTerms":4`, `"pendingTerms":9223372036854775807`, `"pendingTerms":9223372036854775808`},
		{`"partialPasses":1`, `"partialPasses":9223372036854775807`, `"partialPasses":9223372036854775808`},
		{`"stalls":2`, `"stalls":9223372036854775807`, `"stalls":9223372036854775808`},
		{`"stalls":2`, `"stalls":92233720368547758070`, `"stalls":99999999999999999999`},
	} {
		if !strings.Contains(good, c.from) {
			t.Fatalf("%s not in %s", c.from, good)
		}
		max := []byte(strings.Replace(good, c.from, c.max, 1))
		if c.max != `"stalls":92233720368547758070` && !checkFastAgrees(t, max) {
			t.Errorf("the one-pass decoder declined %s", c.max)
		}
		if _, ok := decodeFast([]byte(strings.Replace(good, c.from, c.over, 1))); ok {
			t.Errorf("the one-pass decoder accepted %s", c.over)
		}
	}
	// bpUnconvergedPasses is written only when not zero: added by hand.
	in := strings.Replace(good, `"bpUnconvergedPasses":1`, `"bpUnconvergedPasses":9223372036854775807`, 1)
	if !checkFastAgrees(t, []byte(in)) {
		t.Errorf("the one-pass decoder declined the largest bpUnconvergedPasses")
	}
	in = strings.Replace(good, `"bpUnconvergedPasses":1`, `"bpUnconvergedPasses":9223372036854775808`, 1)
	if _, ok := decodeFast([]byte(in)); ok {
		t.Errorf("the one-pass decoder accepted bpUnconvergedPasses past int")
	}
}

// TestDecodeFastBoundsNesting: the one-pass decoder declines a schema
// nested deeper than it skips, at once, instead of recursing as deep as
// the text goes (a hostile metadata.json of nested brackets would exhaust
// the stack; the test runs with a small stack limit to catch it), and
// reads a schema that ends with the text as truncated.
func TestDecodeFastBoundsNesting(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(16 << 20))
	for _, deep := range []string{strings.Repeat("[", 1<<20), strings.Repeat(`{"a":`, 1<<18)} {
		if _, ok := decodeFast([]byte(`{"version":1,"schema":` + deep)); ok {
			t.Fatal("accepted a truncated nested schema")
		}
	}
}

// TestDecodeFastDeclinesInvalidUTF8: a string made only of bytes that are
// not UTF-8 (no ASCII among them) is declined by the one-pass decoder:
// the reference reads each as U+FFFD.
func TestDecodeFastDeclinesInvalidUTF8(t *testing.T) {
	good := encode(t, fullSample())
	for _, s := range []string{"\x80", "\xff", "\xc3", "\xff\xfe", "\xe2\x80"} {
		for _, from := range []string{`"suffix":"cmp"`, `"field":"émb"`} {
			name, _, _ := strings.Cut(from, ":")
			in := strings.Replace(good, from, name+`:"`+s+`"`, 1)
			if in == good {
				t.Fatalf("%s not in %s", from, good)
			}
			if checkFastAgrees(t, []byte(in)) {
				t.Errorf("the one-pass decoder accepted %q", s)
			}
		}
	}
}
