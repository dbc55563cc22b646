package defaults

import (
	"testing"
	"time"
)

func TestSet(t *testing.T) {
	for _, c := range []struct{ v, d, want int }{{0, 5, 5}, {-1, 5, 5}, {3, 5, 3}} {
		v := c.v
		Set(&v, c.d)
		if v != c.want {
			t.Errorf("Set(%d, %d) = %d, want %d", c.v, c.d, v, c.want)
		}
	}
	s := ""
	Set(&s, "x")
	if s != "x" {
		t.Errorf("empty string: got %q, want x", s)
	}
	s = "y"
	Set(&s, "x")
	if s != "y" {
		t.Errorf("set string: got %q, want y", s)
	}
	d := time.Duration(-1)
	Set(&d, time.Second)
	if d != time.Second {
		t.Errorf("negative duration: got %v", d)
	}
}
