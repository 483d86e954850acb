package summary

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRegisterLookup: a provider registered under a name is found under any
// case of it, listed by Providers, and registering it twice, blank or nil
// panics.
func TestRegisterLookup(t *testing.T) {
	t.Parallel()
	// The registry is the process's, as database/sql's drivers: a name of
	// its own for each run keeps go test -count=N from registering twice.
	name := fmt.Sprintf("test-provider-%d", registrations.Add(1))
	svc := NewExtractiveService()
	Register(" Test-"+strings.TrimPrefix(name, "test-")+" ", func(context.Context, Settings) (Service, error) { return svc, nil })
	f, ok := LookupProvider(strings.ToUpper(name[:4]) + name[4:])
	if !ok {
		t.Fatal("registered provider not found")
	}
	if got, err := f(context.Background(), Settings{}); err != nil || got != svc {
		t.Fatalf("factory returned %v, %v", got, err)
	}
	if !slices.Contains(Providers(), name) {
		t.Fatalf("Providers() = %v", Providers())
	}
	if _, ok := LookupProvider("test-absent"); ok {
		t.Fatal("unregistered provider found")
	}
	for what, register := range map[string]func(){
		"twice": func() {
			Register(name, func(context.Context, Settings) (Service, error) { return nil, nil })
		},
		"blank name":  func() { Register("  ", func(context.Context, Settings) (Service, error) { return nil, nil }) },
		"nil factory": func() { Register("test-nil", nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register %s did not panic", what)
				}
			}()
			register()
		}()
	}
}

// registrations numbers the providers the tests register.
var registrations atomic.Int64

// TestSettingsAPIKey: the key comes from the named variable only, else from
// the first default variable holding a non-blank value; without one the
// error names every variable read.
func TestSettingsAPIKey(t *testing.T) {
	t.Parallel()
	env := map[string]string{"FIRST": " ", "SECOND": " k2 ", "MINE": "k3"}
	s := Settings{Provider: "p", Env: func(n string) (string, bool) { v, ok := env[n]; return v, ok }}
	if k, err := s.APIKey("FIRST", "SECOND"); err != nil || k != "k2" {
		t.Fatalf("defaults: %q, %v", k, err)
	}
	s.APIKeyEnv = "MINE"
	if k, err := s.APIKey("SECOND"); err != nil || k != "k3" {
		t.Fatalf("explicit: %q, %v", k, err)
	}
	s.APIKeyEnv = "UNSET"
	_, err := s.APIKey("SECOND")
	var ke *APIKeyError
	if !errors.As(err, &ke) || !ke.Explicit || !slices.Equal(ke.Vars, []string{"UNSET"}) || !strings.Contains(err.Error(), "UNSET") {
		t.Fatalf("explicit unset: %v", err)
	}
	s.APIKeyEnv = ""
	_, err = s.APIKey("NONE1", "NONE2")
	if !errors.As(err, &ke) || ke.Explicit || !strings.Contains(err.Error(), "NONE1, NONE2") {
		t.Fatalf("no default: %v", err)
	}
}
