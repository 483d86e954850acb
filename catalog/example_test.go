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
	store, sums := memory.NewInMemoryStore(), summary.NewInMemoryStore(0)
	cat := catalog.New(store, sums, catalog.NewMemoryIndex()) // offline: lexical embedder, extractive titles
	defer cat.Close()

	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 4, 2
	mgr, err := memory.NewManager(store, cfg,
		memory.WithSummaries(sums, summary.NewExtractiveService()),
		memory.WithFoldObserver(cat.Observer())) // titles and embeddings follow the folds
	if err != nil {
		panic(err)
	}
	defer mgr.Close()

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
	_ = mgr.Flush(ctx) // waits for folds and observers (only needed in examples and tests)

	for _, request := range []string{
		"let's go back to the chat where we talked about the refund",
		"the Tokyo trip",
		"my tax return",
	} {
		matches, err := cat.Search(ctx, "alice", request, 3)
		if err != nil {
			panic(err)
		}
		switch winner, ambiguous := cat.Decide(matches); {
		case winner != nil:
			fmt.Printf("%q: switch to %s (%s)\n", request, winner.SessionID, winner.Title)
		case ambiguous:
			fmt.Printf("%q: ask which of %d chats\n", request, len(catalog.Contenders(matches, catalog.DefaultMargin)))
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
// titles and the reference's previews.
func ExampleCatalog_List() {
	ctx := context.Background()
	store := memory.NewInMemoryStore()
	cat := catalog.New(store, nil, catalog.NewMemoryIndex())
	defer cat.Close()
	mgr, err := memory.NewManager(store, memory.DefaultConfig())
	if err != nil {
		panic(err)
	}
	defer mgr.Close()

	_ = mgr.SaveTurn(ctx, "a", "alice", "Hi! Can you recommend a good book about the history of Rome?", "Try SPQR by Mary Beard.")
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
	// b | What is the weather in Oslo tomorrow | "What is the weather in Oslo tomorrow?" | 2 messages
	// a | Can you recommend a good book about the history of Rome | "Hi! Can you recommend a good book about the histor..." | 2 messages
}
