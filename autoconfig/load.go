package autoconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// LoadOptions says where Load reads configuration from.
type LoadOptions struct {
	// Files are YAML files, applied in order (a later file wins). A missing
	// or malformed file is an error naming it.
	Files []string
	// Environ is the environment as "NAME=value" strings; nil means the
	// process environment (os.Environ). It is also where the summarizer's
	// API key and ${NAME} placeholders are looked up.
	Environ []string
	// Overrides are "key=value" settings applied after the environment
	// (highest precedence), e.g. from a command line. They accept the keys
	// YAML files accept; a key may also be written as its environment
	// variable (ARC_REACTOR_…=value).
	Overrides []string
	// OverrideSource names the overrides in errors and Config.Source
	// (default "override"; the strata command uses "--set").
	OverrideSource string
}

// Load reads the configuration: the defaults (Default), then each YAML file
// in order, then the process environment. The result is validated; an
// error names the offending key (see Error).
func Load(paths ...string) (*Config, error) {
	return LoadWith(LoadOptions{Files: paths})
}

// LoadWithEnv is Load with an explicit environment ("NAME=value" strings)
// instead of the process environment, e.g. for tests that run in parallel.
// A nil environ means the process environment.
func LoadWithEnv(environ []string, paths ...string) (*Config, error) {
	if environ == nil {
		environ = []string{}
	}
	return LoadWith(LoadOptions{Files: paths, Environ: environ})
}

// LoadWith reads the configuration from the defaults, opts.Files,
// opts.Environ and opts.Overrides, in that order of precedence, and
// validates it.
func LoadWith(opts LoadOptions) (*Config, error) {
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	envMap := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}
	cfg := Default()
	cfg.set = map[string]string{}
	cfg.unused = map[string]string{}
	cfg.lookupEnv = func(name string) (string, bool) {
		v, ok := envMap[name]
		return v, ok
	}

	for _, path := range opts.Files {
		vals, err := readYAML(path)
		if err != nil {
			return nil, err
		}
		if err := cfg.applyFile(path, vals); err != nil {
			return nil, err
		}
	}
	if err := cfg.applyEnv(environ); err != nil {
		return nil, err
	}
	src := opts.OverrideSource
	if src == "" {
		src = "override"
	}
	if err := cfg.applyOverrides(opts.Overrides, src); err != nil {
		return nil, err
	}
	cfg.resolveAlias()
	if cfg.IsSet(keyMaxNarrative) { // one narrative cap: the summarizer's and the ledger's
		cfg.Memory.MaxNarrativeTokens = cfg.Summary.MaxNarrativeTokens
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// readYAML reads one YAML file into a flat key → value map.
func readYAML(path string) (map[string]any, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("config file %s: %w", path, fs.ErrNotExist)
	case err != nil:
		return nil, fmt.Errorf("config file %s: %s", path, oneLine(err.Error()))
	case st.IsDir():
		return nil, fmt.Errorf("config file %s: is a directory", path)
	}
	k := koanf.New(".")
	if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
		return nil, fmt.Errorf("config file %s: malformed YAML: %s", path, oneLine(err.Error()))
	}
	return k.All(), nil
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// applyFile applies the keys of one YAML file.
func (c *Config) applyFile(path string, vals map[string]any) error {
	seen := map[string]string{} // key → raw key, to catch the same key twice
	set := map[string]any{}
	for _, raw := range sortedKeys(vals) {
		v := vals[raw]
		k, kind := classifyKey(raw, v)
		switch kind {
		case kindUnknown:
			return unknownKey(raw, path)
		case kindUnused:
			c.unused[raw] = path
			continue
		case kindSection:
			continue
		}
		if prev, ok := seen[k.name]; ok && prev != raw {
			return newError(k.name, "", path, fmt.Sprintf("set twice, as %q and %q", prev, raw))
		}
		seen[k.name] = raw
		if v == nil { // null: keep the default, as Spring does
			continue
		}
		if s, ok := v.(string); ok && strings.Contains(s, "${") {
			r, err := c.resolvePlaceholders(s)
			if err != nil {
				return newError(k.name, maskIf(k, quote(s)), path, err.Error())
			}
			v = r
		}
		set[k.name] = v
	}
	return c.decode(set, path)
}

// applyEnv applies the environment variables of known keys. An unknown
// ARC_REACTOR_MEMORY_* variable is an error.
func (c *Config) applyEnv(environ []string) error {
	var unknown []string
	k := koanf.New(".")
	err := k.Load(env.Provider("", env.Opt{
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, v string) (string, any) {
			if _, ok := keyEnv[name]; ok {
				return name, v // no "." in the name: stays flat
			}
			if arcEnv[name] {
				return "", nil // arc-reactor's own setting
			}
			if strings.HasPrefix(name, "ARC_REACTOR_MEMORY_") || misspelledEnv(name) {
				unknown = append(unknown, name)
			}
			return "", nil
		},
	}), nil)
	if err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		name := unknown[0]
		msg := "unknown environment variable"
		if s := suggestEnv(name); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return newError(name, "", "", msg)
	}
	// Both forms of one key may be set: the "_"-for-"-" form wins.
	chosen := map[string]string{} // key → env name
	for _, name := range k.Keys() {
		spec := keyEnv[name]
		if prev, ok := chosen[spec.name]; ok && prev == envName(spec.name) {
			continue
		}
		chosen[spec.name] = name
	}
	// Each variable is its own source, so keys are decoded one by one, in
	// the order of keyTable.
	for _, spec := range keyTable {
		name, ok := chosen[spec.name]
		if !ok {
			continue
		}
		v := k.String(name)
		if v == "" && spec.typ.Kind() != reflect.String { // NAME= on a number: unset
			continue
		}
		if err := c.decode(map[string]any{spec.name: v}, "environment variable "+name); err != nil {
			return err
		}
	}
	return nil
}

// applyOverrides applies "key=value" settings.
func (c *Config) applyOverrides(overrides []string, source string) error {
	for _, o := range overrides {
		raw, v, ok := strings.Cut(o, "=")
		if !ok {
			return newError(strings.TrimSpace(o), "", source, "want key=value")
		}
		raw = strings.TrimSpace(raw)
		k, kind := classifyKey(raw, v)
		if !strings.Contains(raw, ".") { // an environment variable's name: ARC_REACTOR_…=v
			switch e, ok := keyEnv[raw]; {
			case ok:
				k, kind = e, kindStrata
			case arcEnv[raw]:
				kind = kindUnused
			default: // neither a key nor a variable of one
				kind = kindUnknown
			}
		}
		switch kind {
		case kindUnknown, kindSection:
			return unknownKey(raw, source)
		case kindUnused:
			c.unused[raw] = source
			continue
		}
		if err := c.decode(map[string]any{k.name: v}, source); err != nil {
			return err
		}
	}
	return nil
}

// resolveAlias applies summary.llm-model: when it is set and
// summarizer.provider is not, the provider it names, or whose model it
// names, becomes the summarizer provider.
func (c *Config) resolveAlias() {
	if c.IsSet(keySummarizerProvider) || !c.IsSet(keyLLMModel) {
		return
	}
	if p := llmModelProvider(c.Summary.LLMModel); p != "" {
		c.Summarizer.Provider = p
		c.set[keySummarizerProvider] = keyLLMModel + " (" + c.Source(keyLLMModel) + ")"
	}
}

var placeholderRE = regexp.MustCompile(`\$\{([^{}:]*)(?::([^{}]*))?\}`)

// resolvePlaceholders replaces Spring placeholders, ${NAME} and
// ${NAME:default}, with environment variables. NAME may also be a property
// name (${db.url} reads DB_URL).
func (c *Config) resolvePlaceholders(s string) (string, error) {
	var firstErr error
	out := placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		name := strings.TrimSpace(sub[1])
		if v, ok := c.LookupEnv(name); ok {
			return v
		}
		if v, ok := c.LookupEnv(envName(name)); ok {
			return v
		}
		if strings.Contains(m, ":") {
			return sub[2]
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("placeholder ${%s} is not set in the environment (give a default with ${%s:value})", name, name)
		}
		return m
	})
	return out, firstErr
}

// misspelled reports whether canon, the canonical form of a key neither
// Strata nor arc-reactor defines, looks like a misspelling of one Strata
// reads: a section name close to memory or llm (arc.reactor.memroy.…), a
// prefix close to arc.reactor (arc.reacter.memory.…), a key close to one
// of the llm keys Strata reads, or close to spring.datasource.url,
// username or password. (Any other unknown key under arc.reactor is an
// error too, see classifyKey; outside it, other tools' keys are accepted.)
func misspelled(canon string) bool {
	parts := strings.Split(canon, ".")
	if len(parts) < 3 {
		return false
	}
	if parts[0]+"."+parts[1] == "spring.datasource" {
		for _, k := range []string{keySpringURL, keySpringUser, keySpringPassword} {
			if d := levenshtein(canon, canonical(k)); d > 0 && d <= 2 {
				return true
			}
		}
		return false
	}
	if root := parts[0] + "." + parts[1]; root != "arc.reactor" {
		if levenshtein(root, "arc.reactor") > 2 {
			return false
		}
		fixed := "arc.reactor." + strings.Join(parts[2:], ".")
		return keyCanon[fixed] != nil || misspelled(fixed) || parts[2] == "memory"
	}
	switch sec := parts[2]; sec {
	case "memory":
		return false // checked strictly
	case "llm":
		for _, k := range []string{keyMaxTurns, keyWindow, keyMaxOutput} {
			if d := levenshtein(canon, canonical(k)); d > 0 && d <= 2 {
				return true
			}
		}
		return false
	default:
		return levenshtein(sec, "memory") <= 2 || levenshtein(sec, "llm") <= 1
	}
}

// misspelledEnv is misspelled for an environment variable outside
// ARC_REACTOR_MEMORY_*: ARC_REACTOR_MEMROY_…, or a variable close to one
// of the llm keys Strata reads.
func misspelledEnv(name string) bool {
	rest, ok := strings.CutPrefix(name, "ARC_REACTOR_")
	if !ok {
		return false
	}
	sec, _, _ := strings.Cut(rest, "_")
	if sec == "LLM" {
		for _, k := range []string{keyMaxTurns, keyWindow, keyMaxOutput} {
			if d := levenshtein(name, envName(k)); d > 0 && d <= 2 {
				return true
			}
		}
		return false
	}
	return sec != "MEMORY" && (levenshtein(sec, "MEMORY") <= 2 || levenshtein(sec, "LLM") <= 1)
}

func unknownKey(raw, source string) error {
	msg := "unknown key"
	if s := suggestKey(canonical(raw)); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return newError(raw, "", source, msg)
}

// suggestKey returns the known key closest to canon: the nearest by edit
// distance when it is close enough (among Strata's keys, and arc-reactor's
// for a key under arc.reactor), else the nearest with the same last
// segment (a key in the wrong section).
func suggestKey(canon string) string {
	best, bestD := "", 1<<30
	for _, k := range keyTable {
		if d := levenshtein(canon, canonical(k.name)); d < bestD {
			best, bestD = k.name, d
		}
	}
	if inArcReactor(canon) {
		for _, name := range arcKeyNames {
			if d := levenshtein(canon, canonical(name)); d < bestD && keyCanon[canonical(name)] == nil {
				best, bestD = name, d
			}
		}
	}
	if bestD <= max(3, len(canon)/8) {
		return best
	}
	// A key in the wrong section: the nearest key with the same last
	// segment, Strata's first.
	last := canon[strings.LastIndex(canon, ".")+1:]
	sameLast := func(name string) bool {
		kc := canonical(name)
		return kc[strings.LastIndex(kc, ".")+1:] == last
	}
	best, bestD = "", 1<<30
	for _, k := range keyTable {
		if d := levenshtein(canon, canonical(k.name)); sameLast(k.name) && d < bestD {
			best, bestD = k.name, d
		}
	}
	if best == "" && inArcReactor(canon) {
		for _, name := range arcKeyNames {
			if d := levenshtein(canon, canonical(name)); sameLast(name) && d < bestD {
				best, bestD = name, d
			}
		}
	}
	return best
}

func suggestEnv(name string) string {
	if k := suggestKey(canonical(strings.ReplaceAll(name, "_", "."))); k != "" {
		return envName(k)
	}
	best, bestD := "", 1<<30
	for _, k := range keyTable {
		if d := levenshtein(name, envName(k.name)); d < bestD {
			best, bestD = envName(k.name), d
		}
	}
	if bestD <= 3 {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func maskIf(k *keySpec, v string) string {
	if k.secret {
		return `"*****"`
	}
	return v
}
