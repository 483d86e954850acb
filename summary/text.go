package summary

import (
	"strings"
	"unicode"
)

func isBlank(s string) bool { return strings.TrimFunc(s, unicode.IsSpace) == "" }
