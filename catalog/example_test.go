package catalog_test

import (
	"context"
	"fmt"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// A voice assistant's "let's go back to the chat where we talked about the
// refund": search the user's conversations, switch on a clear winner, or
// ask which one was meant.
func ExampleCatalog_Search() {
	ctx := context.Background()
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 4, 2

	// The manager comes first; the catalogue subscribes to it, so that
	// titles and embeddings follow folds and deletes.
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg,
		memory.WithSummaries(summary.NewInMemoryStore(0), summary.NewExtractiveService()))
	if err != nil {
		panic(err)
	}
	defer mgr.Close()
	cat, err := catalog.New(mgr, catalog.NewMemoryIndex()) // offline: lexical embedder, extractive titles
	if err != nil {
		panic(err)
	}
	defer cat.Close()

	for _, turn := range [][3]string{
		{"refund", "My blender from order #4417 arrived broken.", "Sorry! I can refund order #4417."},
		{"refund", "Please refund it to my card.", "Done: $89.99 is refunded to your card."},
		{"refund", "How long will the refund take?", "About five days."},
		{"tokyo", "Help me plan a trip to Tokyo in April.", "April is cherry blossom season."},
		{"tokyo", "Which area of Tokyo should we stay in?", "Shinjuku is convenient."},
		{"tokyo", "Are there direct flights to Tokyo from Chicago?", "Yes, to Haneda."},
	} {
		_ = mgr.SaveTurn(ctx, turn[0], "alice", turn[1], turn[2])
	}
	// Wait for the folds, then for the refreshes they scheduled (only
	// needed in examples and tests).
	_ = mgr.Flush(ctx)
	_ = cat.Flush(ctx)

	for _, request := range []string{
		"let's go back to the chat where we talked about the refund",
		"the Tokyo trip",
		"my tax return",
	} {
		res, err := cat.Search(ctx, "alice", request, 3)
		if err != nil {
			panic(err)
		}
		switch {
		case res.Best != nil:
			fmt.Printf("%q: switch to %s (%s)\n", request, res.Best.SessionID, res.Best.Title)
		case res.Ambiguous:
			fmt.Printf("%q: ask which of %d chats\n", request, len(res.Contenders))
		default:
			fmt.Printf("%q: no such chat\n", request)
		}
	}
	// Output:
	// "let's go back to the chat where we talked about the refund": switch to refund (My blender from order #4417 arrived broken)
	// "the Tokyo trip": switch to tokyo (Help me plan a trip to Tokyo in April)
	// "my tax return": no such chat
}

// List pages through a user's conversations, newest activity first, with
// titles and previews; a title given when a conversation was created is
// pinned with SetTitle.
func ExampleCatalog_List() {
	ctx := context.Background()
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	if err != nil {
		panic(err)
	}
	defer mgr.Close()
	cat, err := catalog.New(mgr, catalog.NewMemoryIndex())
	if err != nil {
		panic(err)
	}
	defer cat.Close()

	_ = mgr.SaveTurn(ctx, "a", "alice", "Hi! Can you recommend a good book about the history of Rome?", "Try SPQR by Mary Beard.")
	_ = mgr.Create(ctx, "b", "alice")
	_ = cat.SetTitle(ctx, "b", "alice", "Oslo weekend")
	_ = mgr.SaveTurn(ctx, "b", "alice", "What is the weather in Oslo tomorrow?", "Cold and clear.")
	_ = mgr.SaveTurn(ctx, "c", "bob", "Bob's private chat.", "Sure.")

	page, err := cat.List(ctx, "alice", 10, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println("total:", page.Total)
	for _, e := range page.Sessions {
		fmt.Printf("%s | %s | %q | %d messages\n", e.SessionID, e.Title, e.Preview, e.MessageCount)
	}
	// Output:
	// total: 2
	// b | Oslo weekend | "What is the weather in Oslo tomorrow?" | 2 messages
	// a | Can you recommend a good book about the history of Rome | "Hi! Can you recommend a good book about the histor..." | 2 messages
}
