package autoconfig

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	kyaml "github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/v2"
)

// How values are bound. Each source — a YAML file, the environment, the
// overrides — yields its values under the keys of keyTable (Load resolves
// arc-reactor's relaxed spellings, environment variable names and unused
// keys first). decode loads them into a koanf instance and binds them with
// koanf's Unmarshal into a struct that has one field per key, tagged with
// the key's name and pointing at the Config field the key sets, so that
// only the keys a source sets change. The decode hook converts the values
// (YAML scalars, or strings from the environment) to the fields' types.

var durationType = reflect.TypeFor[time.Duration]()

// bindType is the struct koanf unmarshals into: field i is a pointer to
// keyTable[i]'s type, tagged koanf:"<key name>".
var bindType = func() reflect.Type {
	fields := make([]reflect.StructField, len(keyTable))
	for i, k := range keyTable {
		fields[i] = reflect.StructField{
			Name: "K" + strconv.Itoa(i),
			Type: reflect.PointerTo(k.typ),
			Tag:  reflect.StructTag(`koanf:"` + k.name + `"`),
		}
	}
	return reflect.StructOf(fields)
}()

// decode sets the keys of one source in c: vals maps key names (keyTable's)
// to raw values. A value of the wrong type is an *Error naming the key and
// source; the keys of vals are recorded as set by source.
func (c *Config) decode(vals map[string]any, source string) error {
	if len(vals) == 0 {
		return nil
	}
	k := koanf.New(".")
	for name, v := range vals { // never a map: files are read flat
		if err := k.Set(name, v); err != nil {
			return newError(name, "", source, err.Error())
		}
	}
	target := reflect.New(bindType)
	for i, spec := range keyTable {
		target.Elem().Field(i).Set(reflect.ValueOf(spec.field(c)))
	}
	err := k.UnmarshalWithConf("", target.Interface(), koanf.UnmarshalConf{
		FlatPaths: true,
		DecoderConfig: &mapstructure.DecoderConfig{
			DecodeHook:  decodeHook(c),
			ErrorUnused: true,
			TagName:     "koanf",
		},
	})
	if err != nil {
		var de *mapstructure.DecodeError
		if errors.As(err, &de) {
			if _, ok := keyIndex[de.Name()]; ok {
				return newError(de.Name(), "", source, errors.Unwrap(de).Error())
			}
		}
		return fmt.Errorf("%s: %w", source, err)
	}
	for name := range vals {
		if l, ok := keyIndex[name].field(c).(*[]string); ok && !keyIndex[name].keepBlank {
			*l = slices.DeleteFunc(*l, func(e string) bool { return e == "" })
		}
		// An empty list is no list, as in Default.
		if f := reflect.ValueOf(keyIndex[name].field(c)).Elem(); f.Kind() == reflect.Slice && f.Len() == 0 {
			f.Set(reflect.Zero(f.Type()))
		}
		c.set[name] = source
	}
	return nil
}

// decodeHook converts the raw value of a key to its field's type: the
// conversions of convert, for every key's field.
func decodeHook(c *Config) mapstructure.DecodeHookFuncValue {
	keyTypes := map[reflect.Type]bool{}
	for _, k := range keyTable {
		keyTypes[k.typ] = true
	}
	return func(from, to reflect.Value) (any, error) {
		if !keyTypes[to.Type()] || from.Kind() == reflect.Invalid {
			return from.Interface(), nil // the binding struct, a pointer, a list's entry
		}
		return convert(c, to.Type(), from.Interface())
	}
}

// convert converts raw, a YAML value or an environment string, to typ, the
// type of a key's field. Its errors say what was wanted and what was got,
// without the key.
func convert(c *Config, typ reflect.Type, raw any) (any, error) {
	switch typ {
	case durationType:
		return toDuration(raw)
	case reflect.TypeFor[[]string]():
		return toStringList(raw)
	case reflect.TypeFor[[]APIKeyConfig]():
		l, err := parseAPIKeys(c, raw)
		if l == nil {
			// Not nil: mapstructure skips nil values, which would keep the
			// previous source's list (decode makes it nil).
			l = []APIKeyConfig{}
		}
		return l, err
	}
	switch typ.Kind() {
	case reflect.Bool:
		return toBool(raw)
	case reflect.Int:
		return toInt(raw)
	case reflect.Int64:
		n, err := toInt(raw)
		return int64(n), err
	case reflect.Float64:
		return toFloat(raw)
	case reflect.String:
		s, err := toString(raw)
		return reflect.ValueOf(s).Convert(typ).Interface(), err
	}
	return nil, fmt.Errorf("autoconfig: no conversion to %s", typ) // a key of a new type
}

// toStringList reads a list of strings: a YAML list, or in the environment
// and overrides a comma-separated string (blank as a whole: the empty list;
// a trailing comma adds no entry) or a YAML flow list (flowList). Entries are trimmed; decode drops the
// blank ones unless the key keeps them (keepBlank). The list is never nil
// (see convert).
func toStringList(raw any) ([]string, error) {
	var items []any
	switch v := raw.(type) {
	case nil:
	case []any:
		items = v
	case string:
		if strings.TrimSpace(v) == "" {
			break
		}
		if t := strings.TrimSpace(v); strings.HasPrefix(t, "[") {
			return flowList(t)
		}
		parts := strings.Split(v, ",")
		if strings.TrimSpace(parts[len(parts)-1]) == "" {
			parts = parts[:len(parts)-1] // a trailing comma
		}
		for _, e := range parts {
			items = append(items, e)
		}
	default:
		return nil, fmt.Errorf("want a list of strings, got %s", describe(raw))
	}
	out := make([]string, 0, len(items))
	for i, e := range items {
		str, err := toString(e)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %v", i+1, err)
		}
		out = append(out, str)
	}
	return out, nil
}

// flowList reads a list written as YAML writes it inline, "[a, b]" or
// `["a", "b"]`, in the environment or an override: the same list as in a
// file. A value that starts with "[" and is not such a list is refused, so
// that a list's bracket never becomes part of an entry. (Brackets inside a
// comma-separated entry stay: store.pinned-fact-keys takes path.Match
// patterns such as case_[0-9]*.)
func flowList(s string) ([]string, error) {
	bad := fmt.Errorf("%q starts with \"[\" but is not a YAML list such as [a, b]", s)
	if !strings.HasSuffix(s, "]") {
		return nil, bad
	}
	m, err := kyaml.Parser().Unmarshal([]byte("v: " + s))
	if err != nil {
		return nil, bad
	}
	items, ok := m["v"].([]any)
	if !ok {
		return nil, bad
	}
	out := make([]string, 0, len(items))
	for i, e := range items {
		str, err := toString(e)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %v", i+1, err)
		}
		if strings.ContainsAny(str, "[]") {
			return nil, fmt.Errorf("entry %d (%q) holds a bracket: write nested lists in a YAML file", i+1, str)
		}
		out = append(out, str)
	}
	return out, nil
}

// Scalar conversions. Values come from YAML (bool, int, float64, string,
// nil, maps, lists) or from the environment (strings).

func toInt(raw any) (int, error) {
	switch v := raw.(type) {
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case uint64:
		if v <= math.MaxInt64 {
			return int(v), nil
		}
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int(v), nil
		}
	case string:
		s := strings.TrimSpace(v)
		if n, err := strconv.Atoi(s); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int(f), nil
		}
	}
	return 0, fmt.Errorf("want an integer, got %s", describe(raw))
}

func toBool(raw any) (bool, error) {
	switch v := raw.(type) {
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "yes", "on", "1":
			return true, nil
		case "false", "no", "off", "0":
			return false, nil
		}
	case int:
		if v == 0 || v == 1 {
			return v == 1, nil
		}
	}
	return false, fmt.Errorf("want true or false, got %s", describe(raw))
}

func toFloat(raw any) (float64, error) {
	switch v := raw.(type) {
	case float64:
		return v, nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	case uint64:
		return float64(v), nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, nil
		}
	}
	return 0, fmt.Errorf("want a number, got %s", describe(raw))
}

func toDuration(raw any) (time.Duration, error) {
	switch v := raw.(type) {
	case int, int64, uint64, float64:
		ms, err := toInt(v)
		if err == nil {
			return time.Duration(ms) * time.Millisecond, nil
		}
	case string:
		s := strings.TrimSpace(v)
		if d, err := time.ParseDuration(s); err == nil {
			return d, nil
		}
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Duration(ms) * time.Millisecond, nil
		}
	}
	return 0, fmt.Errorf("want a duration such as 60s, 500ms or 2m (a bare number is milliseconds), got %s", describe(raw))
}

func toString(raw any) (string, error) {
	switch v := raw.(type) {
	case string:
		return strings.TrimSpace(v), nil
	case bool, int, int64, uint64, float64:
		return fmt.Sprint(v), nil
	}
	return "", fmt.Errorf("want a string, got %s", describe(raw))
}

func describe(raw any) string {
	switch v := raw.(type) {
	case string:
		return strconv.Quote(v)
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case nil:
		return "null"
	default:
		return fmt.Sprint(v)
	}
}
