// Package topics tests topic subscriptions and topic sends end to end on a
// private local stack (reconciles every second; the campaign fan-out paced
// to 400 notifications a second, so a cancel lands in the middle of it;
// email at 1,000/s, bulk 600/s): a topic of N subscribers, 3 muted and 1
// excluded, notified once is N-4 emails, each user once; the counts add
// up; a replay sends nothing more; subscribing twice stores once; a cancel
// mid-fan-out stops the rest. By default with 200 subscribers (go test);
// make test-topics with the 2,000 (HERALD_TOPICS_SUBSCRIBERS).
package topics

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], "-test.run=^$") { // make bench: no benchmarks here
		os.Exit(m.Run())
	}
	stacktest.Main(m, devstack.Config{
		ScheduleInterval: time.Second,
		Overrides: map[string]string{
			"CampaignReconcileDelay": "1s",
			"CampaignFanOutRate":     "400",
			"EmailSendRate":          "1000",
			"LowBatchSize":           "10", "LowMaximumConcurrency": "8",
		},
	})
}

// campaign is GET /v1/campaigns/{id}.
type campaign struct {
	ID, Type, Priority, Status, Topic                    string
	Recipients, Notified, Sent, Skipped, Failed, Dropped int
	FinishedAt                                           *string
}

func getCampaign(t *testing.T, id string) campaign {
	t.Helper()
	r := stacktest.Do(t, http.MethodGet, "/v1/campaigns/"+id, nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("get campaign: %d %s", r.StatusCode, r.Body)
	}
	var c campaign
	r.JSON(t, &c)
	return c
}

func wantProblem(t *testing.T, r *stacktest.Response, status int, code string) {
	t.Helper()
	var p struct{ Code string }
	_ = json.Unmarshal(r.Body, &p)
	if r.StatusCode != status || p.Code != code {
		t.Fatalf("%s %s: %d %s, want %d %s", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.Body, status, code)
	}
}

func quoted(ids []string) string {
	q, _ := json.Marshal(ids)
	return string(q)
}

// seedProfiles writes the users' profiles straight to the table (a
// profile each, 16 at once): the test is about the topic, not the users
// route.
func seedProfiles(t *testing.T, ids []string) {
	t.Helper()
	st := stacktest.Store(t)
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	sem := make(chan struct{}, 16)
	for _, u := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs <- st.PutUser(context.Background(), &domain.User{ID: u, Email: u + "@example.com"})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// emailsByUser counts the emails to this run's users.
func emailsByUser(t *testing.T, run string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range stacktest.Emails(t) {
		for _, to := range e.Destination.To {
			if u, ok := strings.CutSuffix(to, "@example.com"); ok && strings.HasPrefix(u, run) {
				out[u]++
			}
		}
	}
	return out
}

// subscribers is the topic's size: HERALD_TOPICS_SUBSCRIBERS (make
// test-topics: 2,000), else 200.
func subscribers(t *testing.T) int {
	n := 200
	if v := os.Getenv("HERALD_TOPICS_SUBSCRIBERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 20 {
			t.Fatalf("HERALD_TOPICS_SUBSCRIBERS %q: want a number of at least 20", v)
		}
	}
	return n
}

const content = `"type":"reservation.approved","priority":"low","channels":["email"],"data":{"reservationUrl":"https://example.com/r/1"}`

// TestTopicSend: N subscribers (3 muted, one from the user's own
// route), the actor excluded → N-4 emails, each user once; the muted get
// nothing (skipped: muted, no inbox item); the send is the caller's; a
// replay sends nothing more; then a second send cancelled mid-fan-out
// sends no more than it had, each user at most once.
func TestTopicSend(t *testing.T) {
	st := stacktest.Stack(t)
	run := stacktest.UniqueID("tp")
	topic := "thread:" + run
	size := subscribers(t)
	people := make([]string, size)
	for i := range people {
		people[i] = fmt.Sprintf("%s-%04d", run, i)
	}
	seedProfiles(t, people)

	// Subscribe in calls of 500 (a call that times out on a loaded machine
	// is retried as it is: subscribing is idempotent); one again stores
	// nothing.
	subscribe := func(ids []string) (added int) {
		t.Helper()
		for attempt := 1; ; attempt++ {
			r := stacktest.Do(t, http.MethodPut, "/v1/topics/"+topic+"/subscribers", `{"userIds":`+quoted(ids)+`}`)
			if r.StatusCode == http.StatusServiceUnavailable && attempt < 5 {
				continue
			}
			var got struct{ Subscribed, Added int }
			r.JSON(t, &got)
			if r.StatusCode != http.StatusOK || got.Subscribed != len(ids) {
				t.Fatalf("subscribe: %d %s, want %d subscribed", r.StatusCode, r.Body, len(ids))
			}
			return got.Added
		}
	}
	for i := 0; i < len(people); i += 500 {
		subscribe(people[i:min(i+500, size)])
	}
	if added := subscribe(people[:min(500, size)]); added != 0 {
		t.Fatalf("subscribing again added %d", added)
	}
	listed := 0
	for cursor := ""; ; {
		path := "/v1/topics/" + topic + "/subscribers?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Subscribers []struct{ UserID string }
			NextCursor  string
		}
		stacktest.Do(t, http.MethodGet, path, nil).JSON(t, &page)
		listed += len(page.Subscribers)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if listed != len(people) {
		t.Fatalf("the topic lists %d subscribers, want %d (each once)", listed, len(people))
	}

	// Three mute it: one with their own token, two through the service route.
	muted := []string{people[3], people[size/4], people[size-1]}
	token := "Authorization: Bearer " + st.Token(muted[0], time.Hour)
	if r := stacktest.Do(t, http.MethodPut, "/v1/me/topics/"+topic, `{"muted":true}`, token); r.StatusCode != http.StatusOK {
		t.Fatalf("mute: %d %s", r.StatusCode, r.Body)
	}
	for _, u := range muted[1:] {
		if r := stacktest.Do(t, http.MethodPut, "/v1/users/"+u+"/topics/"+topic, `{"muted":true}`); r.StatusCode != http.StatusOK {
			t.Fatalf("mute %s: %d %s", u, r.StatusCode, r.Body)
		}
	}
	var mine struct {
		Topics []struct {
			Topic string
			Muted bool
		}
	}
	stacktest.Do(t, http.MethodGet, "/v1/me/topics", nil, token).JSON(t, &mine)
	if len(mine.Topics) != 1 || mine.Topics[0].Topic != topic || !mine.Topics[0].Muted {
		t.Fatalf("my topics %+v, want %s muted", mine.Topics, topic)
	}
	wantProblem(t, stacktest.Do(t, http.MethodPut, "/v1/me/topics/thread:nothing", `{"muted":true}`, token), http.StatusNotFound, "not_subscribed")

	actor := people[10]
	body := `{` + content + `,"recipient":{"topic":"` + topic + `"},"exclude":["` + actor + `"]}`
	key := "Idempotency-Key: " + run
	r := stacktest.Do(t, http.MethodPost, "/v1/notifications", body, key)
	var sent struct{ ID, Topic, Recipients string }
	r.JSON(t, &sent)
	if r.StatusCode != http.StatusAccepted || sent.Topic != topic || sent.Recipients != "pending" || sent.ID == "" {
		t.Fatalf("topic send: %d %s", r.StatusCode, r.Body)
	}
	// A replay while it fans out answers the same and starts nothing more.
	again := stacktest.Do(t, http.MethodPost, "/v1/notifications", body, key)
	var replay struct{ ID string }
	again.JSON(t, &replay)
	if again.StatusCode != http.StatusAccepted || again.Header.Get("Idempotent-Replayed") != "true" || replay.ID != sent.ID {
		t.Fatalf("replay: %d %s (replayed %q)", again.StatusCode, again.Body, again.Header.Get("Idempotent-Replayed"))
	}
	wantProblem(t, stacktest.Do(t, http.MethodPost, "/v1/notifications", strings.Replace(body, "/r/1", "/r/2", 1), key), http.StatusUnprocessableEntity, "idempotency_key_reused")

	var c campaign
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last campaign read: %+v", c)
		}
	})
	stacktest.Eventually(t, 180*time.Second, "topic send done", func() bool {
		c = getCampaign(t, sent.ID)
		return c.Status == "done"
	})
	if c.Topic != topic || c.Recipients != size-1 || c.Notified != size-1 || c.Sent != size-4 || c.Skipped != 3 || c.Failed != 0 || c.Dropped != 0 {
		t.Errorf("done with %+v, want %d recipients (the actor left out): %d sent, 3 skipped (muted)", c, size-1, size-4)
	}
	got := emailsByUser(t, run)
	for _, u := range people {
		want := 1
		if u == actor || slices.Contains(muted, u) {
			want = 0
		}
		if got[u] != want {
			t.Errorf("%s received %d emails, want %d", u, got[u], want)
		}
	}
	// The send is the caller's: its notifications are read by it, not by another.
	var n struct {
		Deliveries map[string]struct{ Status, Reason string }
	}
	stacktest.Do(t, http.MethodGet, "/v1/notifications/"+domain.CampaignNotificationID(sent.ID, muted[1]), nil).JSON(t, &n)
	if d := n.Deliveries["email"]; d.Status != "skipped" || d.Reason != "muted" {
		t.Errorf("muted subscriber's email %+v, want skipped: muted", d)
	}
	wantProblem(t, stacktest.Do(t, http.MethodGet, "/v1/notifications/"+domain.CampaignNotificationID(sent.ID, people[0]), nil, "X-Herald-Dev-Caller: other"),
		http.StatusNotFound, "notification_not_found")
	inboxOf := func(u string) int {
		var page struct{ Items []struct{ ID string } }
		stacktest.Do(t, http.MethodGet, "/v1/users/"+u+"/inbox", nil, "Authorization: Bearer "+st.Token(u, time.Hour)).JSON(t, &page)
		return len(page.Items)
	}
	if a, m := inboxOf(people[0]), inboxOf(muted[0]); a != 1 || m != 0 {
		t.Errorf("inbox items: %d for a subscriber (want 1), %d for a muted one (want 0)", a, m)
	}
	// A replay after done sends nothing more either.
	if again := stacktest.Do(t, http.MethodPost, "/v1/notifications", body, key); again.StatusCode != http.StatusAccepted || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay after done: %d %s", again.StatusCode, again.Body)
	}

	// A second send, cancelled as it fans out: what was not sent yet is
	// dropped, nobody gets it twice, and the counts add up.
	r = stacktest.Do(t, http.MethodPost, "/v1/notifications", `{`+content+`,"recipient":{"topic":"`+topic+`"}}`)
	r.JSON(t, &sent)
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("second send: %d %s", r.StatusCode, r.Body)
	}
	// Mid-fan-out: once a shard's page is read (before it, the cancel
	// stops the scan and there is nothing to drop).
	stacktest.Eventually(t, 30*time.Second, "second send fanning out", func() bool {
		c = getCampaign(t, sent.ID)
		return c.Recipients > 0
	})
	for attempt := 1; ; attempt++ { // a cancel that runs out of time on a loaded machine is retried: cancelling again is idempotent
		r := stacktest.Do(t, http.MethodDelete, "/v1/campaigns/"+sent.ID, nil)
		if r.StatusCode == http.StatusServiceUnavailable && attempt < 5 {
			continue
		}
		if r.StatusCode != http.StatusOK {
			t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
		}
		break
	}
	cancelled := time.Now()
	stacktest.Eventually(t, 60*time.Second, "cancelled send settled", func() bool {
		c = getCampaign(t, sent.ID)
		return c.FinishedAt != nil
	})
	t.Logf("the cancelled send settled %s after the cancel: %+v", time.Since(cancelled).Round(100*time.Millisecond), c)
	if c.Status != "cancelled" || c.Dropped == 0 || c.Sent >= size-3 || c.Sent+c.Skipped+c.Failed+c.Dropped != c.Recipients {
		t.Errorf("cancelled send ended %+v: want some dropped, fewer than %d sent, counts adding up", c, size-3)
	}
	second := emailsByUser(t, run)
	extra := 0
	for _, u := range people {
		if d := second[u] - got[u]; d > 1 {
			t.Errorf("%s received %d emails from the cancelled send", u, d)
		} else {
			extra += d
		}
	}
	if extra != c.Sent {
		t.Errorf("%d emails from the cancelled send, its count says %d", extra, c.Sent)
	}
}
