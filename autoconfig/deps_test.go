package autoconfig

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoProviderSDKDependencies: the Gemini SDK and gRPC are linked only
// into programs that import a provider package, never through memory,
// agent or autoconfig.
func TestNoProviderSDKDependencies(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(goBin, "list", "-deps",
		"github.com/strata-go/strata/autoconfig", "github.com/strata-go/strata/agent", "github.com/strata-go/strata/memory")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/google/generative-ai-go") || strings.HasPrefix(pkg, "google.golang.org/grpc") {
			t.Errorf("%s is a dependency", pkg)
		}
	}
}
