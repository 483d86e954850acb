package autoconfig

import (
	_ "embed"
	"sort"
	"strconv"
	"strings"
)

// arcReactorKeysText lists every key arc-reactor defines under arc.reactor
// (see the file's header for how it was made).
//
//go:embed arcreactor_keys.txt
var arcReactorKeysText string

const arcPrefix = "arc.reactor"

// Lookup tables of arc-reactor's own keys, built from arcReactorKeysText.
var (
	arcKeys     = map[string]string{} // canonical → key as arc-reactor spells it
	arcMaps     []string              // canonical prefixes of map properties
	arcSections = map[string]bool{}   // canonical prefixes of arc-reactor keys
	arcEnv      = map[string]bool{}   // environment variable names of arc-reactor keys
	arcKeyNames []string              // arc-reactor's keys, sorted
)

func init() {
	for _, line := range strings.Split(arcReactorKeysText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, isMap := strings.CutSuffix(line, ".*")
		canon := canonical(key)
		if isMap {
			arcMaps = append(arcMaps, canon)
		} else {
			arcKeys[canon] = key
			arcKeyNames = append(arcKeyNames, key)
			arcEnv[envName(key)] = true
			arcEnv[springEnvName(key)] = true
		}
		parts := strings.Split(canon, ".")
		end := len(parts)
		if !isMap {
			end--
		}
		for j := 1; j <= end; j++ {
			arcSections[strings.Join(parts[:j], ".")] = true
		}
	}
	sort.Strings(arcKeyNames)
}

// isArcReactorKey reports whether canon, a canonical key, is one that
// arc-reactor defines: a key of its properties, or any key below one of
// its map properties.
func isArcReactorKey(canon string) bool {
	if _, ok := arcKeys[canon]; ok {
		return true
	}
	for _, m := range arcMaps {
		if strings.HasPrefix(canon, m+".") {
			return true
		}
	}
	return false
}

// inArcReactor reports whether canon is arc.reactor or a key below it.
func inArcReactor(canon string) bool {
	return canon == arcPrefix || strings.HasPrefix(canon, arcPrefix+".")
}

// keyKind is how Load treats a key of a file or an override.
type keyKind int

const (
	kindStrata  keyKind = iota // a key of Strata's table: read
	kindUnused                 // arc-reactor's or Spring's: accepted, not used, listed
	kindSection                // an empty section of known keys (memory: with nothing below)
	kindUnknown                // neither: an error naming it, with a suggestion
)

// classifyKey says what a key (raw, as written) with value v is: one of
// Strata's keys (returned), a key of arc-reactor's or of another tool's
// (Spring, server, logging, …) that Strata does not use, an empty
// section, or unknown. Every key under arc.reactor must be Strata's or
// arc-reactor's; outside arc.reactor any key is accepted, except one that
// looks like a misspelling of arc.reactor (arc.reacter.memory.…).
func classifyKey(raw string, v any) (*keySpec, keyKind) {
	canon := canonical(raw)
	if k := keyCanon[canon]; k != nil {
		return k, kindStrata
	}
	if isArcReactorKey(canon) {
		return nil, kindUnused
	}
	if misspelled(canon) {
		return nil, kindUnknown
	}
	if !inArcReactor(canon) {
		return nil, kindUnused
	}
	if isEmpty(v) && (canon == arcPrefix || sectionOK[canon] || arcSections[canon]) {
		return nil, kindSection
	}
	return nil, kindUnknown
}

// Unused returns the keys that the configuration files and overrides set
// and Strata accepts without using them — arc-reactor's other settings
// (tool selection, guard, slack, …) and other tools' (server, spring.ai,
// logging, …) — sorted, each once.
func (c *Config) Unused() []string {
	out := make([]string, 0, len(c.unused))
	for k := range c.unused {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// UnusedNote is one line naming the sections of Unused, for an
// information log ("" when every key set is Strata's), e.g.
// "configuration keys not used by Strata (arc-reactor's and Spring's
// other settings, accepted): arc.reactor.guard.*, server.*, spring.ai.*".
func (c *Config) UnusedNote() string {
	keys := c.Unused()
	if len(keys) == 0 {
		return ""
	}
	var groups []string
	seen := map[string]bool{}
	for _, k := range keys {
		// A section: arc.reactor.X, spring.X or the top-level name, one
		// level deeper while it holds keys of Strata's (memory.user.*).
		parts := strings.Split(k, ".")
		n := 1
		switch {
		case inArcReactor(canonical(k)):
			n = 3
		case canonical(parts[0]) == "spring":
			n = 2
		}
		for n < len(parts) && sectionOK[canonical(strings.Join(parts[:n], "."))] {
			n++
		}
		g := strings.Join(parts[:min(n, len(parts))], ".")
		if len(parts) > n {
			g += ".*"
		}
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	return "configuration keys not used by Strata (" + strconv.Itoa(len(keys)) + " keys of arc-reactor's and Spring's other settings, accepted): " +
		strings.Join(groups, ", ")
}
