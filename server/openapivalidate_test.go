package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The server's tests validate every response they receive against
// openapi.json with kin-openapi's openapi3filter (testServer.try calls
// checkResponse): its status must be documented for the route, and its
// headers and body must match the document, so the document and the
// handlers cannot drift apart.

var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

// specRouterOf loads openapi.json once, validates it, and returns a router
// over it.
func specRouterOf() (routers.Router, error) {
	specOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(openAPISpec)
		if err != nil {
			specErr = err
			return
		}
		if err = doc.Validate(loader.Context); err != nil {
			specErr = err
			return
		}
		specRouter, specErr = legacy.NewRouter(doc)
	})
	return specRouter, specErr
}

// checkResponse validates one response (status, headers, body) against the
// operation openapi.json documents for req. Requests to paths or methods
// the document does not have (probes of unknown routes) are not checked.
func checkResponse(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	router, err := specRouterOf()
	if err != nil {
		t.Errorf("openapi.json does not load: %v", err)
		return
	}
	// The document's server is where strata serve listens by default, not
	// where tests do: match the request as if sent there.
	req = req.Clone(context.Background())
	req.URL.Scheme, req.URL.Host, req.Host = "http", "127.0.0.1:8080", "127.0.0.1:8080"
	route, params, err := router.FindRoute(req)
	if err != nil {
		t.Logf("no route %s %s: %v", req.Method, req.URL, err)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: status,
		Header: header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s answered %d %s, which openapi.json does not allow: %v", req.Method, req.URL.Path, status, bytes.TrimSpace(body[:min(len(body), 300)]), err)
	}
}

// The validator rejects what the document does not allow: a response to
// GET /v1/sessions/{id} with an unknown field, and an undocumented status.
func TestCheckResponseCatchesDrift(t *testing.T) {
	t.Parallel()
	req, _ := http.NewRequest("GET", "http://127.0.0.1:1/v1/sessions/s1", nil)
	h := http.Header{"Content-Type": {"application/json"}}
	ok := []byte(`{"id":"s1","title":"","message_count":1,"messages":[{"seq":1,"role":"user","content":"hi","created_at":"2026-01-01T00:00:00Z"}],"next_after_seq":null,"summary":null}`)
	bad := bytes.Replace(ok, []byte(`"content":"hi"`), []byte(`"content":"hi","colour":"red"`), 1)
	var rec recorderTB
	checkResponse(&rec, req, 200, h, ok)
	if rec.failed || rec.msg != "" {
		t.Fatalf("a valid response was refused: %s", rec.msg)
	}
	checkResponse(&rec, req, 200, h, bad)
	if !rec.failed {
		t.Fatal("a message with an unknown field was accepted")
	}
	rec = recorderTB{}
	checkResponse(&rec, req, 418, h, []byte(`{}`))
	if !rec.failed {
		t.Fatal("an undocumented status was accepted")
	}
}

// recorderTB records whether checkResponse reported an error.
type recorderTB struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorderTB) Helper()                         {}
func (r *recorderTB) Logf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }
func (r *recorderTB) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}
