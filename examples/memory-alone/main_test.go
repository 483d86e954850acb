package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestQuickstartFoldsTheConversation(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"[system] Conversation Facts:",
		"- order_id: #A-7731",
		"- user_name: Dana Whitfield [ENTITY]",
		"fallbacks: 0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
