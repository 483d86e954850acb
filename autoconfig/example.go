package autoconfig

import (
	"bufio"
	"io"
	"strings"
)

// exampleHeader opens config.example.yaml.
const exampleHeader = `# Strata configuration: every key with its default value and meaning.
#
# Load order: these defaults < YAML files (--config, autoconfig.Load) < the
# environment. Every key has an environment variable: the key upper-cased,
# "." and "-" replaced by "_" (shown as "env:" below).
#
# Keys marked (arc-reactor) are arc-reactor's own properties, so an
# arc-reactor application.yml starts unchanged. Its other keys (tool
# selection, guard, memory.user, slack, ...) and other tools' (server,
# spring.ai, logging, ...) are accepted and listed once, at info level, as
# not used by Strata. A key under arc.reactor that neither Strata nor
# arc-reactor defines is an error naming it, with a suggestion. --set
# accepts the same keys.
#
# Coming from arc-reactor: a trigger-message-count below
# recent-message-count is accepted (hierarchical as soon as a message
# precedes the window). spring.datasource.url may stay a JDBC URL: without
# sslmode it connects as the JDBC driver does (sslmode=prefer: TLS when the
# server offers it), and JDBC-only properties are dropped. Strata's tables
# (strata_*) never clash with arc-reactor's; its summaries can be imported
# (strata migrate). Shared slack- threads need shared-session-prefixes.
#
# Switch the summarizer with two lines (programs built on the Go packages
# import the provider package, e.g. github.com/strata-go/strata/providers/gemini;
# the strata command includes both), e.g.
#   arc.reactor.memory.summary.enabled: true
#   arc.reactor.memory.summarizer.provider: gemini     # key in GOOGLE_API_KEY
# or, for Ollama / vLLM / llama.cpp:
#   arc.reactor.memory.summarizer.provider: openai
#   arc.reactor.memory.summarizer.base-url: http://localhost:11434/v1
#   (and summarizer.model: the model the server serves)
`

// WriteExampleYAML writes a YAML document that sets every key to its
// default value, each preceded by a comment with its meaning and environment
// variable (config.example.yaml is its output).
func WriteExampleYAML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(exampleHeader)
	def := Default()
	var open []string // path of the maps written so far
	for _, k := range keyTable {
		parts := strings.Split(k.name, ".")
		parents, leaf := parts[:len(parts)-1], parts[len(parts)-1]
		common := 0
		for common < len(open) && common < len(parents) && open[common] == parents[common] {
			common++
		}
		if common < len(parents) && common == 0 {
			bw.WriteString("\n")
		}
		for i := common; i < len(parents); i++ {
			if i == common && i >= 2 {
				bw.WriteString("\n")
			}
			bw.WriteString(strings.Repeat("  ", i) + parents[i] + ":\n")
		}
		open = parents
		indent := strings.Repeat("  ", len(parents))
		doc := k.doc
		if k.reference {
			doc = "(arc-reactor) " + doc
		}
		for _, line := range wrap(doc, 78-len(indent)) {
			bw.WriteString(indent + "# " + line + "\n")
		}
		bw.WriteString(indent + "# env: " + envName(k.name) + "\n")
		bw.WriteString(indent + leaf + ": " + k.format(def) + "\n")
	}
	return bw.Flush()
}

// wrap splits text into lines of at most width characters at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
