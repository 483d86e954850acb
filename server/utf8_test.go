package server

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Invalid UTF-8, raw or as an escaped lone surrogate, is refused with 400
// instead of being stored as U+FFFD; a surrogate pair is one character.
func TestInvalidUTF8Refused(t *testing.T) {
	ts := stack{}.start(t)
	id := ts.create(keyAlice, nil)
	path := "/v1/sessions/" + id + "/messages"
	for name, body := range map[string]string{
		"raw invalid byte":    "{\"turn\":{\"user\":\"caf\xe9\"}}",
		"lone high surrogate": `{"turn":{"user":"a\ud800b"}}`,
		"lone low surrogate":  `{"turn":{"user":"a\udc00"}}`,
		"reversed pair":       `{"turn":{"user":"\udc00\ud800"}}`,
		"invalid title":       "{\"title\":\"\xff\"}",
	} {
		p := path
		if strings.Contains(name, "title") {
			p = "/v1/sessions"
		}
		r := ts.do("POST", p, keyAlice, []byte(body))
		if e := r.errorOf(t); r.status != 400 || e.Code != "bad_request" {
			t.Errorf("%s: %s, want 400", name, r)
		}
	}
	ts.must(200, "POST", path, keyAlice, []byte(`{"turn":{"user":"smile \ud83d\ude00 and \\ud800 as text"}}`), nil)
	var got struct {
		MessageCount int `json:"message_count"`
		Messages     []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &got)
	if got.MessageCount != 1 || got.Messages[0].Content != `smile 😀 and \ud800 as text` {
		t.Fatalf("stored: %+v", got)
	}
}

// loneSurrogate never panics, and a body it passes decodes without a
// replacement character it did not contain.
func FuzzLoneSurrogate(f *testing.F) {
	for _, s := range []string{`"a\ud800"`, `"\ud83d\ude00"`, `"\\ud800"`, `"\udc00\ud800"`, `"\u00e9\`, `"\ud800\u"`, `"\uFFFD"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		i := loneSurrogate(raw)
		if i >= len(raw) {
			t.Fatalf("offset %d past the end", i)
		}
		var s string
		if i >= 0 || !utf8.Valid(raw) || json.Unmarshal(raw, &s) != nil {
			return
		}
		mentions := strings.Count(string(raw), "\uFFFD") + strings.Count(strings.ToLower(string(raw)), `\ufffd`)
		if n := strings.Count(s, "\uFFFD"); n > mentions {
			t.Fatalf("%q decoded to %q: %d replacement characters from %d", raw, s, n, mentions)
		}
	})
}
