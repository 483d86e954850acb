package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tmc/langchaingo/memory/alloydb"
	lcschema "github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/util/alloydbutil"

	"github.com/strata-go/strata/bench/internal/runner"
)

const langchaingoModule = "github.com/tmc/langchaingo"

// langchaingoHistory is section 15's peer: langchaingo's own PostgreSQL
// chat history (memory/alloydb.ChatMessageHistory; its memory/cloudsql
// twin runs the same statements) over a pgx pool on the run's database,
// its table made by the library's own InitChatHistoryTable.
func langchaingoHistory() runner.PGHistoryPeer {
	return runner.PGHistoryPeer{
		Name: "langchaingo PostgreSQL history",
		Description: fmt.Sprintf("**langchaingo PostgreSQL history**: `github.com/tmc/langchaingo/memory/alloydb` %s `ChatMessageHistory` (the same statements as its `memory/cloudsql` twin) over a pgx pool on the same database, its table made by `alloydbutil.PostgresEngine.InitChatHistoryTable` (which creates no index: runs with and without one on `(session_id, id)`), under `memory.NewConversationWindowBuffer` or `NewConversationTokenBuffer`. It stores a message's text and type only (an assistant's tool calls are lost) and loads the whole session on every call.",
			moduleVersion(langchaingoModule)),
		Open: openLangchaingoHistory,
	}
}

// lcTable is one chat history table of the peer.
type lcTable struct {
	pool          *pgxpool.Pool
	engine        alloydbutil.PostgresEngine
	schema, table string
}

func openLangchaingoHistory(ctx context.Context, url, schema, table string, indexed bool) (runner.PGHistory, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	t := &lcTable{pool: pool, engine: alloydbutil.PostgresEngine{Pool: pool}, schema: schema, table: table}
	if err := t.engine.InitChatHistoryTable(ctx, table, alloydbutil.WithSchemaName(schema)); err != nil {
		pool.Close()
		return nil, err
	}
	if indexed {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q.%q (session_id, id)`, table+"_session_id_id", schema, table)
		if _, err := pool.Exec(ctx, q); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return t, nil
}

// Open implements runner.PGHistory.
func (t *lcTable) Open(ctx context.Context, sessionID string) (lcschema.ChatMessageHistory, error) {
	h, err := alloydb.NewChatMessageHistory(ctx, t.engine, t.table, sessionID, alloydb.WithSchemaName(t.schema))
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// Seed implements runner.PGHistory: the rows AddUserMessage and
// AddAIMessage write (data: the text as a JSON string; type: "human" or
// "ai"), in one statement.
func (t *lcTable) Seed(ctx context.Context, sessionID string, n int, filler string) error {
	q := fmt.Sprintf(`INSERT INTO %q.%q (session_id, data, type)
		SELECT $1, to_jsonb('message ' || g || ': ' || $2::text), CASE WHEN g %% 2 = 1 THEN 'human' ELSE 'ai' END
		  FROM generate_series(1, $3::int) AS g ORDER BY g`, t.schema, t.table)
	_, err := t.pool.Exec(ctx, q, sessionID, filler, n)
	return err
}

// Close implements runner.PGHistory.
func (t *lcTable) Close() { t.pool.Close() }
