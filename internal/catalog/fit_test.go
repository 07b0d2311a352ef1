package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// pushLimit is webpush.MaxPlaintextSize (catalog does not import webpush).
const pushLimit = 3993

func TestFitPush(t *testing.T) {
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	url2k := "https://example.com/" + long("a", 1980)
	for _, tc := range []struct {
		name      string
		in        PushPayload
		limit     int
		wantSame  bool // unchanged
		wantURL   bool // link kept
		wantBody  string
		wantTitle string
		wantErr   bool
	}{
		{name: "small fits unchanged", in: PushPayload{ID: "n1", Title: "Hi", Body: "there", URL: "https://example.com/x"}, limit: pushLimit, wantSame: true, wantURL: true},
		{name: "exactly at the limit", in: PushPayload{ID: "n1", Title: "T", Body: long("b", pushLimit-len(`{"id":"n1","title":"T","body":""}`))}, limit: pushLimit, wantSame: true},
		{name: "long body shortened, link kept", in: PushPayload{ID: "n1", Title: "T", Body: long("b", 5000), URL: "https://example.com/x"}, limit: pushLimit, wantURL: true},
		{name: "long link and body: link dropped", in: PushPayload{ID: "n1", Title: "T", Body: long("b", 3000), URL: long("u", 3950)}, limit: pushLimit},
		{name: "two 2,000-character links", in: PushPayload{ID: "n1", Title: "2 new comments", Body: "There are 2 new comments.\n" + url2k + "\n" + url2k, URL: url2k}, limit: pushLimit, wantURL: true},
		{name: "multi-byte body never split", in: PushPayload{ID: "n1", Title: "新しいコメント", Body: long("コメント", 1000)}, limit: pushLimit},
		{name: "escapes counted", in: PushPayload{ID: "n1", Title: "T", Body: long("\"\\\n", 2000)}, limit: pushLimit},
		{name: "HTML characters not escaped", in: PushPayload{ID: "n1", Title: "<b>", Body: "a & b"}, limit: pushLimit, wantSame: true},
		{name: "huge title shortened", in: PushPayload{ID: "n1", Title: long("t", 5000), Body: long("b", 5000), URL: "https://example.com/x"}, limit: pushLimit},
		{name: "tiny limit keeps id and a title", in: PushPayload{ID: "n1", Title: "Title", Body: long("b", 100), URL: "https://x"}, limit: 40},
		{name: "limit below the id", in: PushPayload{ID: "n1234567890", Title: "T"}, limit: 10, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := FitPush(tc.in, tc.limit)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("fitted %s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > tc.limit {
				t.Fatalf("%d bytes, limit %d", len(got), tc.limit)
			}
			if !utf8.Valid(got) {
				t.Fatal("invalid UTF-8")
			}
			var p PushPayload
			if err := json.Unmarshal(got, &p); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			if p.ID != tc.in.ID {
				t.Fatalf("id %q changed", p.ID)
			}
			if changed == tc.wantSame {
				t.Fatalf("changed = %v", changed)
			}
			if tc.wantSame && p != tc.in {
				t.Fatalf("got %+v, want unchanged", p)
			}
			if (p.URL != "") != tc.wantURL || p.URL != "" && p.URL != tc.in.URL {
				t.Fatalf("url %q, want kept %v", p.URL, tc.wantURL)
			}
			if p.Title == "" || !strings.HasPrefix(tc.in.Title, strings.TrimSuffix(p.Title, Ellipsis)) {
				t.Fatalf("title %q is not a prefix of %q", p.Title, tc.in.Title)
			}
			if !strings.HasPrefix(tc.in.Body, strings.TrimSuffix(p.Body, Ellipsis)) {
				t.Fatalf("body %q is not a prefix of the original", p.Body)
			}
			if p.Body != tc.in.Body && p.Body != "" && len(got) < tc.limit-8 {
				t.Errorf("%d bytes: gave up more than needed (limit %d)", len(got), tc.limit)
			}
		})
	}
}

func TestRenderDigestWithin(t *testing.T) {
	typ, ok := MustLoad().Lookup("comment.created")
	if !ok {
		t.Fatal("comment.created missing")
	}
	items := func(n, urlLen int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			u := fmt.Sprintf("https://example.com/%d/", i)
			out[i] = map[string]any{"actorLabel": "A", "url": u + strings.Repeat("x", max(urlLen-len(u), 0))}
		}
		return out
	}
	fitsPush := func(c Content) bool {
		return len(PushPayload{ID: "n0123456789abcdefghjkmnpqrst", Title: c.Title, Body: c.Body, URL: c.URL}.Encode()) <= pushLimit
	}
	for _, tc := range []struct {
		name      string
		locale    string
		data      DigestData
		wantItems int // URLs listed in the body
		wantMore  int
	}{
		{name: "short links: all ten", locale: "en", data: DigestData{Count: 12, Items: items(10, 40)}, wantItems: 10, wantMore: 2},
		{name: "ten 300-character links", locale: "en", data: DigestData{Count: 10, Items: items(10, 300)}, wantItems: 10, wantMore: 0},
		{name: "ten 600-character links", locale: "en", data: DigestData{Count: 10, Items: items(10, 600)}, wantItems: 5, wantMore: 5},
		{name: "two 2,000-character links", locale: "en", data: DigestData{Count: 2, Items: items(2, 2000)}, wantItems: 1, wantMore: 1},
		{name: "japanese, 600-character links", locale: "ja", data: DigestData{Count: 10, Items: items(10, 600)}, wantItems: 5, wantMore: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := typ.RenderDigestWithin(KindPush, tc.locale, tc.data, fitsPush)
			if err != nil {
				t.Fatal(err)
			}
			listed := 0
			for _, it := range tc.data.Items {
				if strings.Contains(c.Body, it["url"].(string)) {
					listed++
				}
			}
			if listed != tc.wantItems {
				t.Errorf("%d items listed, want %d: %q", listed, tc.wantItems, c.Body)
			}
			more := fmt.Sprintf("and %d more", tc.wantMore)
			if tc.locale == "ja" {
				more = fmt.Sprintf("ほか %d 件", tc.wantMore)
			}
			if tc.wantMore > 0 && !strings.Contains(c.Body, more) {
				t.Errorf("body lacks %q: %q", more, c.Body)
			}
			if c.URL != tc.data.Items[0]["url"] {
				t.Errorf("link %q, want the newest item's", c.URL)
			}
			if tc.wantItems < 2 {
				return // the single push is fitted by FitPush
			}
			if !fitsPush(c) {
				t.Errorf("does not fit")
			}
		})
	}
	// Without a budget, the digest renders as before.
	c, err := typ.RenderDigestWithin(KindPush, "en", DigestData{Count: 2, Items: items(2, 2000)}, nil)
	if err != nil || strings.Count(c.Body, "https://") != 2 {
		t.Fatalf("no budget: %v %q", err, c.Body)
	}
}
