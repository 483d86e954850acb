package server

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestCurlScript runs testdata/curl_e2e.sh against a real server on a
// loopback port, as a shell client would use it.
func TestCurlScript(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: skipping the curl script test (install curl and jq to run it)", tool)
		}
	}
	ts := stack{}.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "testdata/curl_e2e.sh")
	cmd.Env = append(os.Environ(), "STRATA_URL="+ts.url, "STRATA_KEY="+keyAlice, "STRATA_OTHER_KEY="+keyBob)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("curl_e2e.sh: %v\n%s", err, out)
	}
	t.Logf("curl_e2e.sh:\n%s", out)
}
