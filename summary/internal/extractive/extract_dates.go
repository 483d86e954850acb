package extractive

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/text"
)

// relativeDateRE matches dates said relative to the day they are said.
var relativeDateRE = regexp.MustCompile(`(?i)\b(?:the\s+day\s+after\s+tomorrow|tomorrow|today|tonight|yesterday|` +
	`(?:next|this|coming|last)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|` +
	`in\s+(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?:days?|weeks?))\b`)

// buildRelativeDate keeps a relative date only where it says something
// durable: "next Friday" or "in 3 days" always, "tomorrow" and the like
// only when the clause says what the date is for (a delivery, an
// appointment…), so chitchat about "today" does not become facts.
func buildRelativeDate(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
	v := text[m[0]:m[1]]
	key := dateKey(text, m[0], m[1])
	lv := strings.ToLower(v)
	always := strings.HasPrefix(lv, "next") || strings.HasPrefix(lv, "in ") || strings.HasPrefix(lv, "coming")
	if key == "date" && !always {
		return finding{}, false
	}
	return finding{start: m[0], end: m[1], kind: "date", base: key, value: v, cat: Condition, rel: true}, true
}

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

// resolveRelative turns a relative date said at `at` into "2006-01-02
// (as said)". "next", "this" and "coming" weekdays are the first such day
// after `at`; "last" weekdays the latest one before it. ok is false when at
// is zero or the phrase is not understood; the caller then keeps the words.
func resolveRelative(phrase string, at time.Time) (string, bool) {
	if at.IsZero() {
		return "", false
	}
	p := strings.ToLower(text.Collapse(phrase))
	day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, at.Location())
	var d time.Time
	f := strings.Fields(p)
	wd, isWeekday := time.Weekday(0), false
	if len(f) == 2 {
		wd, isWeekday = weekdays[f[1]]
	}
	switch {
	case p == "today" || p == "tonight":
		d = day
	case p == "tomorrow":
		d = day.AddDate(0, 0, 1)
	case p == "the day after tomorrow":
		d = day.AddDate(0, 0, 2)
	case p == "yesterday":
		d = day.AddDate(0, 0, -1)
	case isWeekday:
		if f[0] == "last" {
			back := (int(day.Weekday()) - int(wd) + 7) % 7
			if back == 0 {
				back = 7
			}
			d = day.AddDate(0, 0, -back)
		} else {
			ahead := (int(wd) - int(day.Weekday()) + 7) % 7
			if ahead == 0 {
				ahead = 7
			}
			d = day.AddDate(0, 0, ahead)
		}
	case len(f) == 3 && f[0] == "in":
		n, err := strconv.Atoi(quantityValue(f[1]))
		if err != nil {
			return "", false
		}
		if strings.HasPrefix(f[2], "week") {
			n *= 7
		}
		d = day.AddDate(0, 0, n)
	default:
		return "", false
	}
	return d.Format("2006-01-02") + " (" + phrase + ")", true
}

// timeCues map words before a time to what the time is for.
var timeCues = []struct {
	re  *regexp.Regexp
	key string
}{
	{regexp.MustCompile(`\b(?:call|ring|phone|callback|reach)\w*\b`), "callback_time"},
	{regexp.MustCompile(`\b(?:deliver\w*|arriv\w*|courier)\b`), "delivery_time"},
	{regexp.MustCompile(`\b(?:appointment|install\w*|technician|visit|pick[- ]?up|collect\w*)\b`), "appointment_time"},
	{regexp.MustCompile(`\b(?:depart\w*|flight|fly\w*|boarding|leav\w*)\b`), "departure_time"},
}

// timeKey names a time after a cue in its clause, or "time".
func timeKey(text string, s int) string {
	before := clauseBefore(text, s, 60)
	for _, c := range timeCues {
		if c.re.MatchString(before) {
			return c.key
		}
	}
	return "time"
}
