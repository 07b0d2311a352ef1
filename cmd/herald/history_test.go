package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// herald user history pages with the filters it was given, following the
// cursor with --all, and prints a line a channel with its decision and times.
func TestUserHistoryFollowsTheCursorWithItsFilters(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/users/u1/notifications" || r.Header.Get("X-Herald-Dev-Caller") != "support" {
			http.Error(w, "unexpected "+r.URL.Path, http.StatusTeapot)
			return
		}
		queries = append(queries, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("cursor") == "" {
			io.WriteString(w, `{"items":[{"id":"n2","type":"comment.created","priority":"normal","caller":"svc","createdAt":"2026-03-01T12:00:02Z",`+
				`"deliveries":{"email":{"status":"deferred","reason":"quiet_hours","decision":"deferred: quiet_hours until 2026-03-01T23:00:00Z","attempts":0,"trail":[]}}}],"nextCursor":"c2"}`)
			return
		}
		io.WriteString(w, `{"items":[{"id":"n1","type":"comment.created","priority":"normal","caller":"svc","createdAt":"2026-03-01T12:00:01Z",`+
			`"deliveries":{"email":{"status":"sent","attempts":1,"queuedAt":"2026-03-01T12:00:01Z","sentAt":"2026-03-01T12:00:02Z","trail":[]}}}]}`)
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	err := runUserHistory(context.Background(), []string{"u1", "--endpoint", srv.URL, "--caller", "support", "--type", "comment.created", "--status", "sent", "--all"},
		&out, &errOut, defaultSendDeps())
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if len(queries) != 2 || !strings.Contains(queries[0], "type=comment.created") || !strings.Contains(queries[0], "status=sent") || !strings.Contains(queries[1], "cursor=c2") {
		t.Errorf("queries %q, want the filters on both pages and the cursor on the second", queries)
	}
	want := "2026-03-01 12:00:02.000Z  n2  comment.created  normal\n" +
		"    email  deferred   deferred: quiet_hours until 2026-03-01T23:00:00Z\n" +
		"2026-03-01 12:00:01.000Z  n1  comment.created  normal\n" +
		"    email  sent       queued 12:00:01.000 · sent 12:00:02.000 · 1 attempt(s)\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if err := runUserHistory(context.Background(), []string{"--endpoint", srv.URL}, &out, &errOut, defaultSendDeps()); err == nil {
		t.Error("no user id: want a usage error")
	}
}
