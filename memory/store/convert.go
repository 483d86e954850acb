package store

import (
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/record"
)

// FromChatMessage converts a langchaingo chat message into a storable
// Message, losslessly: Message.ChatMessage returns an equal message. See
// record.FromChatMessage.
func FromChatMessage(cm llms.ChatMessage) (Message, error) { return record.FromChatMessage(cm) }

// NormalTime returns t as the stores keep it: in UTC, truncated to the
// microsecond; ok is false outside the years 1 to 9999. See
// record.NormalTime.
func NormalTime(t time.Time) (n time.Time, ok bool) { return record.NormalTime(t) }
