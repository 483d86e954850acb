package msgjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

// fuzzFormats are the formats FuzzDecode reads every input in.
var fuzzFormats = map[string]Options{
	"Wire":       Wire,
	"Transcript": Transcript,
	"TauBench":   TauBench,
}

// FuzzDecode feeds arbitrary bytes to the codec's decoders. None panics;
// a message decoded in any format encodes (encoding/json) to JSON that
// decodes to it again, and one ToMemory accepts comes back unchanged
// through FromMemory and ToMemory; the column decoders round-trip through
// their encoders the same way.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","name":"f","content":"ok"}`,
		`{"role":"assistant","content":"x","metadata":{"model_variant":"v","strata.title":"t","":""}}`,
		`{"role":"Human","content":[{"type":"text","text":"a"},{"type":"image_url"},{"text":"b"}],"refusal":null}`,
		`{"role":"ai","tool_calls":[{"id":"c","name":"f","arguments":{"k":[1,2.5e3,"\u00e9"]}},{"arguments":null},null,{"function":null}]}`,
		`{"role":"function","tool_call_id":"c","content":"r","extra":1}`,
		`{"role":"user","text":"misspelt"}`,
		`{"role":"user","content":"a\u0000b\ud800"}`,
		"{\"role\":\"user\",\"content\":\"\xff\"}",
		`[{"id":"c","type":"custom"},{"id":"","type":"","function":{"name":"f","arguments":""}}]`,
		`[{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]`,
		`{"model_variant":"v","":"x"}`,
		`{"role":"user"} {"role":"user"}`,
		`{"role":`, `[`, `null`, `""`, ``, ` `, `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, o := range fuzzFormats {
			m, err := Decode(data, o)
			if err != nil {
				continue
			}
			raw, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("%s: encode %#v: %v", name, m, err)
			}
			again, err := Decode(raw, o)
			if err != nil {
				t.Fatalf("%s: %s decoded as %#v, encoded as %s, which fails: %v", name, data, m, raw, err)
			}
			if !reflect.DeepEqual(again, m) {
				t.Fatalf("%s: %s decoded as %#v, encoded as %s, decoded as %#v", name, data, m, raw, again)
			}
			mm, err := ToMemory(m, o)
			if err != nil {
				continue
			}
			back, err := ToMemory(FromMemory(mm, o), o)
			if err != nil || !reflect.DeepEqual(back, mm) {
				t.Fatalf("%s: %#v through FromMemory and ToMemory gives %#v, %v", name, mm, back, err)
			}
		}
		if tcs, err := DecodeToolCalls(data); err == nil {
			enc, err := EncodeToolCalls(tcs)
			if err != nil {
				t.Fatalf("EncodeToolCalls(%#v): %v", tcs, err)
			}
			if back, err := DecodeToolCalls([]byte(enc)); err != nil || !reflect.DeepEqual(back, tcs) {
				t.Fatalf("tool calls %s decode as %#v, encode as %s, decode as %#v, %v", data, tcs, enc, back, err)
			}
		}
		if md, err := DecodeMetadata(data); err == nil {
			enc, err := EncodeMetadata(md)
			if err != nil {
				t.Fatalf("EncodeMetadata(%#v): %v", md, err)
			}
			if back, err := DecodeMetadata([]byte(enc)); err != nil || !reflect.DeepEqual(back, md) {
				t.Fatalf("metadata %s decodes as %#v, encodes as %s, decodes as %#v, %v", data, md, enc, back, err)
			}
		}
	})
}
