package memory

import (
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
)

// chatMessages converts stored messages to langchaingo chat messages.
func chatMessages(msgs []store.Message) []llms.ChatMessage {
	out := make([]llms.ChatMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m.ChatMessage()
	}
	return out
}
