package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
)

func TestOpenErrorRedactsPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback refuses connections at once.
	_, err := db.Open(ctx, "postgres://alice:hunter2@127.0.0.1:1/app?sslmode=disable&connect_timeout=5")
	if err == nil {
		t.Fatal("Open succeeded against a closed port")
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "alice:xxxxx@127.0.0.1:1") || !strings.HasPrefix(err.Error(), "db: open") {
		t.Errorf("error = %q", err)
	}
	if _, err := db.Open(ctx, "  "); err == nil {
		t.Error("Open accepted an empty data source name")
	}
}
