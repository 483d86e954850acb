package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/strata-go/strata/memory/snapshot"
	"github.com/strata-go/strata/memory/store"
)

// exportChunkBytes bounds the messages WriteExport reads from the store at
// once: a chunk holds at most this many bytes' worth of messages at
// Config.MaxMessageBytes (and at least one message).
const exportChunkBytes = 8 << 20

// exportChunkMax caps the messages of one chunk whatever their size.
const exportChunkMax = 256

// WriteExport writes the session's Snapshot to w as JSON (the document
// Export's result encodes to, without HTML escaping, and a newline),
// streaming it: the messages are read from the store and written in
// chunks of at most 8 MiB at Config.MaxMessageBytes (at most 256
// messages, at least one), so the memory it holds is bounded by a chunk
// and the summary, whatever the session's size.
//
// The summary is read after the messages, and messages appended and
// folded meanwhile are written too, so its cursor never covers a message
// the snapshot lacks but for erased ones; a message erased after it was
// written may be in the snapshot, as in any export made before the
// erasure, but what the erasure removed from the summary is not.
//
// A missing session gives ErrNotFound and another user's ErrNotOwner
// before anything is written. An error after the first write (the store
// failed mid-way, the session was deleted or its summary kept changing)
// leaves w holding an incomplete document: a caller streaming it to a
// client must let the client see that it is cut (an HTTP server aborts
// the response).
func (m *Manager) WriteExport(ctx context.Context, w io.Writer, sessionID, userID string) error {
	owner := m.owner(sessionID, userID)
	fail := func(err error) error { return fmt.Errorf("memory: export %q: %w", sessionID, err) }
	t, err := m.store.Tail(ctx, sessionID, owner, 0)
	if err != nil {
		return fail(err)
	}
	chunk := exportChunkMax
	if mb := m.cfg.MaxMessageBytes; mb > 0 {
		chunk = min(max(exportChunkBytes/mb, 1), exportChunkMax)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// The head is the encoding of a snapshot without messages or summary,
	// cut before its empty messages array closes.
	head := &Snapshot{Version: snapshot.Version, SessionID: sessionID, UserID: owner, ExportedAt: time.Now().UTC(),
		Messages: []snapshot.Message{}}
	if err := enc.Encode(head); err != nil {
		return fail(err)
	}
	const tail = `"messages":[]}` + "\n"
	if !bytes.HasSuffix(buf.Bytes(), []byte(tail)) {
		return fail(fmt.Errorf("snapshot encoding %q does not end with its messages", buf.Bytes()))
	}
	buf.Truncate(buf.Len() - len(tail) + len(`"messages":[`))

	var cursor int64
	written := 0
	// stream writes the messages after cursor, chunk by chunk, and
	// returns how many it wrote.
	stream := func() (int, error) {
		n := 0
		for {
			msgs, err := m.store.Range(ctx, sessionID, owner, cursor, 1<<62, chunk)
			if err != nil {
				return n, err
			}
			for _, msg := range msgs {
				if written > 0 {
					buf.WriteByte(',')
				}
				if err := enc.Encode(snapshot.FromStored(msg)); err != nil {
					return n, fmt.Errorf("message %d: %w", msg.Seq, err)
				}
				buf.Truncate(buf.Len() - 1) // the encoder's newline
				if _, err := w.Write(buf.Bytes()); err != nil {
					return n, err
				}
				buf.Reset()
				cursor = msg.Seq
				written++
				n++
			}
			if len(msgs) < chunk {
				return n, nil
			}
		}
	}
	if _, err := stream(); err != nil {
		return fail(err)
	}
	if written == 0 {
		// Nothing written yet: the head goes out with the rest.
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fail(err)
		}
		buf.Reset()
	}
	for attempt := 0; ; attempt++ {
		sum, err := m.exportedSummary(ctx, sessionID, t.Epoch)
		if err != nil {
			return fail(err)
		}
		now, err := m.store.Tail(ctx, sessionID, owner, 0)
		if err != nil {
			return fail(err)
		}
		if now.Epoch != t.Epoch {
			return fail(fmt.Errorf("%w: the session was deleted and created again during the export", store.ErrNotFound))
		}
		more := 0
		if sum != nil && sum.UpToSeq > cursor {
			// A fold covered messages appended while the others were
			// written: write them too.
			if attempt == exportAttempts {
				return fail(fmt.Errorf("%w: the summary moved past the messages during %d reads in a row", store.ErrUnavailable, exportAttempts))
			}
			if more, err = stream(); err != nil {
				return fail(err)
			}
		}
		if more > 0 {
			continue // read the summary again
		}
		buf.WriteByte(']')
		if s := snapshot.FromSummary(sum); s != nil {
			buf.WriteString(`,"summary":`)
			if err := enc.Encode(s); err != nil {
				return fail(fmt.Errorf("summary: %w", err))
			}
			buf.Truncate(buf.Len() - 1)
		}
		{
			j, err := m.store.ReadJournal(ctx, sessionID, t.Epoch)
			if err != nil {
				return fail(fmt.Errorf("journal: %w", err))
			}
			buf.WriteString(`,"journal":`)
			if err := enc.Encode(j); err != nil {
				return fail(fmt.Errorf("journal: %w", err))
			}
			buf.Truncate(buf.Len() - 1)
		}
		buf.WriteString("}\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fail(err)
		}
		return nil
	}
}
