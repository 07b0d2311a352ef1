package ops

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// TestRunbookQueriesMatchTheLogs parses every CloudWatch Logs Insights query
// in docs/runbook.md and checks, against the JSON log lines the functions
// wrote during this run, that each field a query names exists in real log
// lines, and that each message it filters on is one the code logs. A query
// on a field the logs do not carry (msg instead of message) silently finds
// nothing in an incident.
func TestRunbookQueriesMatchTheLogs(t *testing.T) {
	stacktest.Stack(t)
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	queries := runbookQueries(string(doc))
	if len(queries) < 4 {
		t.Fatalf("found %d Logs Insights queries in the runbook, want at least 4: is the parser broken?\n%q", len(queries), queries)
	}

	// Real lines: one delivery through the relay and the email worker, its
	// first attempt refused for the account (SES paused): the operator
	// alert's line, then the retry sent.
	if err := stacktest.Stack(t).Faults.Set(domain.ChannelEmail, devstack.FaultRefused, 1); err != nil {
		t.Fatal(err)
	}
	id := stacktest.Notify(t, map[string]any{
		"type": "security.login_alert", "recipient": map[string]any{"userId": stacktest.UniqueID("runbook"), "email": "runbook@example.org"},
		"data": map[string]any{"url": "https://example.com/x"},
	})
	delivery(t, id, domain.ChannelEmail, "the email sent", func(d domain.Delivery) bool { return d.Status == domain.StatusSent })
	fields := logFields(t, logs.String())
	if !fields["message"] {
		t.Fatalf("the captured logs have no message field at all (%d fields): is the capture working?", len(fields))
	}
	messages := codeMessages(t, root)

	named := 0
	for _, q := range queries {
		used, literals := queryFields(q)
		named += len(used)
		for _, f := range used {
			if !fields[f] {
				t.Errorf("query %q: field %q is in no log line (fields seen: %v)", q, f, slices.Sorted(mapKeys(fields)))
			}
		}
		for _, m := range literals {
			if !messages[m] {
				t.Errorf("query %q: no code logs the message %q", q, m)
			}
		}
	}
	if named < 10 {
		t.Errorf("the queries name only %d fields: is the parser broken?", named)
	}
}

var insightsCommand = regexp.MustCompile(`^(fields|filter|stats|sort|parse|display|limit|dedup)\b`)

// runbookQueries returns the fenced code blocks and inline code spans that
// are Logs Insights queries (they start with a query command).
func runbookQueries(doc string) []string {
	var out []string
	fenced := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	for _, m := range fenced.FindAllStringSubmatch(doc, -1) {
		if q := strings.TrimSpace(m[1]); insightsCommand.MatchString(q) {
			out = append(out, q)
		}
	}
	rest := fenced.ReplaceAllString(doc, "")
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(rest, -1) {
		if q := strings.Join(strings.Fields(m[1]), " "); insightsCommand.MatchString(q) {
			out = append(out, q)
		}
	}
	return out
}

var (
	insightsLiteral   = regexp.MustCompile(`"[^"]*"|'[^']*'|/[^/]*/`)
	insightsMessageEq = regexp.MustCompile(`\bmessage\s*=\s*"([^"]*)"`)
	insightsWord      = regexp.MustCompile(`@?[A-Za-z_][A-Za-z0-9_.]*(\s*\()?`)
	insightsKeywords  = map[string]bool{
		"fields": true, "filter": true, "stats": true, "sort": true, "parse": true, "display": true, "limit": true, "dedup": true,
		"and": true, "or": true, "not": true, "by": true, "asc": true, "desc": true, "as": true, "like": true, "in": true,
	}
)

// queryFields returns the log fields a query names (not Logs Insights' own
// @fields, functions or keywords) and the messages it compares to.
func queryFields(q string) (fields, messages []string) {
	for _, m := range insightsMessageEq.FindAllStringSubmatch(q, -1) {
		messages = append(messages, m[1])
	}
	bare := insightsLiteral.ReplaceAllString(q, " ")
	for _, w := range insightsWord.FindAllStringSubmatch(bare, -1) {
		name := w[0]
		if w[1] != "" || strings.HasPrefix(name, "@") || insightsKeywords[name] || slices.Contains(fields, name) {
			continue // a function call, a built-in field, a keyword, seen
		}
		fields = append(fields, name)
	}
	return fields, messages
}

// logFields collects the top-level keys of every JSON line in out.
func logFields(t *testing.T, out string) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		for k := range line {
			keys[k] = true
		}
	}
	return keys
}

// codeMessages collects the string literals of the production Go code.
func codeMessages(t *testing.T, root string) map[string]bool {
	t.Helper()
	lit := regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	out := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestQueryFields(t *testing.T) {
	tests := []struct {
		q                string
		fields, messages []string
	}{
		{`fields @timestamp, @log, level, message, channel | filter notificationId = "<id>" | sort @timestamp asc`,
			[]string{"level", "message", "channel", "notificationId"}, nil},
		{`filter message = "delivery outcome" and outcome = "failed" | stats count(*) by reason, priority`,
			[]string{"message", "outcome", "reason", "priority"}, []string{"delivery outcome"}},
		{`filter @message like /Task timed out/`, nil, nil},
		{`filter msg = "relay record failed"`, []string{"msg"}, nil},
	}
	for _, tt := range tests {
		f, m := queryFields(tt.q)
		if !slices.Equal(f, tt.fields) || !slices.Equal(m, tt.messages) {
			t.Errorf("queryFields(%q) = %v, %v; want %v, %v", tt.q, f, m, tt.fields, tt.messages)
		}
	}
}
