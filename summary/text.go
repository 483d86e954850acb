package summary

import (
	"strings"
	"unicode"
)

func isBlank(s string) bool { return strings.TrimFunc(s, unicode.IsSpace) == "" }

func equalFoldTrim(a, b string) bool { return strings.EqualFold(strings.TrimSpace(a), b) }
