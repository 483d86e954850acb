package nilcheck

import (
	"io"
	"strings"
	"testing"
)

func TestIsNil(t *testing.T) {
	var p *strings.Reader
	var r io.Reader = p
	var f func()
	var m map[string]int
	for name, c := range map[string]struct {
		v    any
		want bool
	}{
		"nil":               {nil, true},
		"typed nil ptr":     {r, true},
		"nil func":          {f, true},
		"nil map":           {m, true},
		"value":             {strings.NewReader("x"), false},
		"non-pointer":       {42, false},
		"empty non-nil map": {map[string]int{}, false},
	} {
		if got := IsNil(c.v); got != c.want {
			t.Errorf("%s: IsNil = %v, want %v", name, got, c.want)
		}
	}
}
