package server

import (
	"errors"
	"io"
	"net/http"
	"testing"
)

// A DELETE whose path has dot segments (…/facts/.., …/messages/..,
// /v1/sessions/x/../{id}, and %2E%2E as python-requests sends it) is
// refused with 400, never redirected: ServeMux would answer 307 to the
// cleaned path, and a client that follows it deletes the whole session.
// Sent by a client that does not follow redirects and by one that does;
// the session survives both.
func TestDotSegmentsAreNeverRedirected(t *testing.T) {
	t.Parallel()
	ts := stack{}.start(t)
	id := ts.create(keyAlice, nil)
	ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn("My name is Ada.", "Hello Ada."), nil)
	paths := []string{
		"/v1/sessions/" + id + "/facts/..",
		"/v1/sessions/" + id + "/messages/..",
		"/v1/sessions/" + id + "/facts/%2E%2E",
		"/v1/sessions/" + id + "/facts/%2e%2e",
		"/v1/sessions/" + id + "/messages/%2E%2E",
		"/v1/sessions/" + id + "/messages/.",
		"/v1/sessions/x/../" + id,
		"/v1/sessions/x/%2E%2E/" + id,
		"/v1/sessions/" + id + "/./",
		"/v1/sessions//" + id,
		"/v1/sessions/" + id + "/context/..",
	}
	noFollow := serveClient()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	follow := serveClient()
	var redirects int
	follow.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		redirects++
		if len(via) >= 10 {
			return errors.New("too many redirects")
		}
		return nil
	}
	for _, c := range []*http.Client{noFollow, follow} {
		for _, method := range []string{"DELETE", "GET", "POST"} {
			for _, p := range paths {
				req, err := http.NewRequest(method, ts.url+p, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+keyAlice)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", method, p, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 400 && resp.StatusCode != 404 {
					t.Errorf("%s %s: %d %s (Location %q), want 400 or 404", method, p, resp.StatusCode, body, resp.Header.Get("Location"))
				}
				if resp.Request.URL.String() != ts.url+p {
					t.Errorf("%s %s was redirected to %s", method, p, resp.Request.URL)
				}
			}
		}
	}
	if redirects != 0 {
		t.Errorf("%d redirects followed", redirects)
	}
	var got struct {
		MessageCount int `json:"message_count"`
	}
	ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &got)
	if got.MessageCount != 2 {
		t.Fatalf("the session holds %d messages after the dot-segment requests, want 2", got.MessageCount)
	}
	// A clean path still works.
	ts.must(204, "DELETE", "/v1/sessions/"+id, keyAlice, nil, nil)
}
