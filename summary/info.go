package summary

import "github.com/tmc/langchaingo/llms"

// SummarizerInfo names the summarizer and its model for a fold journal:
// "llm" and the model its call options name ("" when they name none, the
// client's default model).
func (s *llmService) SummarizerInfo() (name, model string) {
	var o llms.CallOptions
	for _, opt := range s.callOpts {
		opt(&o)
	}
	return "llm", o.Model
}

// SummarizerInfo names the offline summarizer for a fold journal.
func (e *extractiveService) SummarizerInfo() (name, model string) { return "extractive", "" }
