package text

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 3, "hel"}, {"hello", 5, "hello"}, {"hello", 9, "hello"}, {"hello", 0, ""}, {"hello", -1, ""},
		{"ßßß", 2, "ßß"}, {"日本語テキスト", 3, "日本語"}, {"", 3, ""},
	} {
		if got := Cut(tc.s, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s, suffix string
		n         int
		want      string
	}{
		{"short", "…", 10, "short"},
		{"exactly10!", "…", 10, "exactly10!"},
		{"one two three four", "…", 9, "one two…"}, // the space before the cut goes
		{"abcdef", "...", 5, "ab..."},
		{"abcdef", "...", 2, "..."},
		{"ßßßßß", "", 3, "ßßß"},
	} {
		if got := Truncate(tc.s, tc.n, tc.suffix); got != tc.want {
			t.Errorf("Truncate(%q, %d, %q) = %q, want %q", tc.s, tc.n, tc.suffix, got, tc.want)
		}
	}
}

func TestPreview(t *testing.T) {
	if got := Preview("", false); got != "Empty conversation" {
		t.Errorf("no user message: %q", got)
	}
	if got := Preview("hi", true); got != "hi" {
		t.Errorf("short: %q", got)
	}
	if got := Preview(strings.Repeat("ß", 50), true); got != strings.Repeat("ß", 50) {
		t.Errorf("50 runes: %q", got)
	}
	if got := Preview(strings.Repeat("ß", 51), true); got != strings.Repeat("ß", 50)+"..." {
		t.Errorf("51 runes: %q", got)
	}
}

func TestTitle(t *testing.T) {
	if got := Title("  a   title \n here ", 60); got != "a title here" {
		t.Errorf("collapse: %q", got)
	}
	long := strings.Repeat("word ", 30)
	got := Title(long, 60)
	if utf8.RuneCountInString(got) > 60 || !strings.HasSuffix(got, "word…") {
		t.Errorf("word boundary: %q", got)
	}
	if got := Title(strings.Repeat("x", 100), 10); got != strings.Repeat("x", 9)+"…" {
		t.Errorf("no boundary: %q", got)
	}
}

func TestStorableAndClean(t *testing.T) {
	for _, tc := range []struct {
		in, clean string
		ok        bool
	}{
		{"plain", "plain", true},
		{"nul\x00byte", "nulbyte", false},
		{"bad\xffutf8", "bad\uFFFDutf8", false},
		{"two\xff\xfebad", "two\uFFFD\uFFFDbad", false},
	} {
		if got := Storable(tc.in); got != tc.ok {
			t.Errorf("Storable(%q) = %v", tc.in, got)
		}
		if got := Clean(tc.in); got != tc.clean || !Storable(got) {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.clean)
		}
	}
}

func FuzzCutTruncate(f *testing.F) {
	for _, s := range []string{"", "hello world", "ßß日本\xff\x00 x"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 1000
		c := Cut(s, n)
		if !strings.HasPrefix(s, c) || (n > 0 && utf8.ValidString(s) && utf8.RuneCountInString(c) != min(n, utf8.RuneCountInString(s))) {
			t.Fatalf("Cut(%q, %d) = %q", s, n, c)
		}
		if tr := Truncate(s, n, "…"); utf8.ValidString(s) && n >= 1 && utf8.RuneCountInString(tr) > n {
			t.Fatalf("Truncate(%q, %d) = %q is longer than %d runes", s, n, tr, n)
		}
		if !Storable(Clean(s)) {
			t.Fatalf("Clean(%q) is not storable", s)
		}
	})
}

func TestSentencesInEveryScript(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Hi there. How are you? Fine!", []string{"Hi there.", "How are you?", "Fine!"}},
		{"Pay $4.50 at example.com. Done", []string{"Pay $4.50 at example.com.", "Done"}},
		{"注文番号はJP-44817です。金額は12万円でした！届きますか？はい", []string{"注文番号はJP-44817です。", "金額は12万円でした！", "届きますか？", "はい"}},
		{"您好。订单号是CN-66120。。 谢谢！！", []string{"您好。", "订单号是CN-66120。。", "谢谢！！"}},
		{"안녕하세요. 주문번호는 ORD-1 입니다! 감사합니다", []string{"안녕하세요.", "주문번호는 ORD-1 입니다!", "감사합니다"}},
		{"Grüße aus Köln. Die Straße heißt Müllerstraße 12! Ça va?", []string{"Grüße aus Köln.", "Die Straße heißt Müllerstraße 12!", "Ça va?"}},
		{"好的?我明白", []string{"好的?我明白"}}, // an ASCII "?" needs a space after it
	}
	for _, tc := range cases {
		if got := Sentences(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Sentences(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestInformativeEndsInTheScriptsPunctuation(t *testing.T) {
	for in, want := range map[string]string{
		"hello there, the order is late": "The order is late.",
		"金額は12万円でした":                     "金額は12万円でした。",
		"订单号是CN-66120":                   "订单号是CN-66120.",
		"주문번호는 ORD-1 입니다":                "주문번호는 ORD-1 입니다.",
		"届きますか？":                         "届きますか？",
		"über die Straße":                "Über die Straße.",
	} {
		if got, ok := Informative(in); !ok || got != want {
			t.Errorf("Informative(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestMayHoldFullWidthPunct: text holding a Chinese or Japanese mark is
// always reported; text without any is reported only when it has other
// runes whose encoding starts alike.
func TestMayHoldFullWidthPunct(t *testing.T) {
	for _, r := range "。、！？，；：「」" {
		if s := "abc" + string(r) + "한국어"; !MayHoldFullWidthPunct(s) {
			t.Errorf("%q: not reported", s)
		}
	}
	for _, s := range []string{"", "plain ASCII. Yes!", "한국어 문장입니다.", "Müllerstraße 12 — “quoted”"} {
		if MayHoldFullWidthPunct(s) {
			t.Errorf("%q: reported", s)
		}
	}
}
