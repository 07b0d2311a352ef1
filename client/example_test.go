package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	"github.com/heraldhq/herald/client"
)

// standIn plays Herald's API for the examples: it accepts
// invoice.payment_failed with an invoiceUrl and answers anything else as
// Herald does.
func standIn() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(client.DevCallerHeader) == "" && r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if !strings.Contains(string(body), "invoiceUrl") {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"type":"https://herald.dev/problems/missing_variable","title":"Unprocessable Entity","status":422,"code":"missing_variable","pointer":"/data/invoiceUrl","detail":"variable \"invoiceUrl\": missing"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"id":"n7d2k4q0s9c1m5v8x3b6f0h2j4","status":"accepted","createdAt":"2026-01-02T03:04:05Z"}`)
	}))
}

// A service sends one notification. In AWS, pass the stack's ApiUrl and
// leave out WithDevCaller: requests are then signed with SigV4 using the
// SDK's default credentials chain.
func Example() {
	herald := standIn() // in real use: http://127.0.0.1:3000 (make dev) or the stack's ApiUrl
	defer herald.Close()

	c, err := client.New(herald.URL, client.WithDevCaller("billing"))
	if err != nil {
		log.Fatal(err)
	}
	accepted, err := c.Send(context.Background(), client.Notification{
		Type:      "invoice.payment_failed",
		Recipient: client.Recipient{UserID: "u1", Email: "u1@example.com"},
		Data:      map[string]string{"invoiceUrl": "https://example.com/i/9"},
		// Retries reuse this key; without one the client generates it.
		IdempotencyKey: "invoice-9-failed",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(accepted.ID, accepted.Status)
	// Output: n7d2k4q0s9c1m5v8x3b6f0h2j4 accepted
}

// Herald's problem documents become *client.Error with the stable code and
// the JSON Pointer of the field at fault.
func ExampleError() {
	herald := standIn()
	defer herald.Close()
	c, _ := client.New(herald.URL, client.WithDevCaller("billing"))

	_, err := c.Send(context.Background(), client.Notification{
		Type:      "invoice.payment_failed",
		Recipient: client.Recipient{UserID: "u1"},
	})
	var herr *client.Error
	if errors.As(err, &herr) {
		fmt.Println(herr.Status, herr.Code, herr.Pointer)
	}
	// Output: 422 missing_variable /data/invoiceUrl
}

// Against a deployed stack the client signs with the SDK's credentials
// chain; the region is read from the execute-api host name.
func ExampleNew() {
	c, err := client.New("https://abc123.execute-api.eu-west-1.amazonaws.com",
		client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 5, Base: 100_000_000, Max: 2_000_000_000}))
	if err != nil {
		fmt.Println("no AWS configuration:", err)
		return
	}
	_ = c
	fmt.Println("ready")
}

// Overrides are merged into the user's preferences; Inherit removes one.
func ExampleClient_UpdatePreferences() {
	herald := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Println(r.Method, r.URL.Path, string(body))
		fmt.Fprint(w, `{"userId":"u1","preferences":{"comment.created":{"push":{"enabled":false,"source":"user"}}}}`)
	}))
	defer herald.Close()
	c, _ := client.New(herald.URL, client.WithDevCaller("app"))

	prefs, err := c.UpdatePreferences(context.Background(), "u1", map[string]map[string]*bool{
		"comment.created": {"push": client.Disable, "email": client.Inherit},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(prefs.Preferences["comment.created"]["push"].Source)
	// Output:
	// PUT /v1/users/u1/preferences {"preferences":{"comment.created":{"email":null,"push":false}}}
	// user
}

// campaignStandIn plays the campaign routes for the example.
func campaignStandIn() *httptest.Server {
	view := func(status string) string {
		return `{"id":"c4m9x2k7q0s1v8b3n6f5h2j4d0","type":"reservation.approved","priority":"low","status":"` + status +
			`","recipients":2500,"notified":0,"sent":0,"skipped":0,"failed":0,"dropped":0,"createdAt":"2026-01-02T03:04:05Z"}`
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/campaigns":
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, view("draft"))
		case strings.HasSuffix(r.URL.Path, "/recipients"):
			fmt.Fprint(w, `{"chunk":0,"recipients":1000}`)
		case strings.HasSuffix(r.URL.Path, "/start"):
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, view("running"))
		default:
			fmt.Fprint(w, view("running"))
		}
	}))
}

// A service sends one notification to thousands of users: a draft campaign,
// its recipients in chunks of up to client.MaxChunk, then the start. Herald
// fans it out in the background; GetCampaign reports the counts.
func ExampleClient_CreateCampaign() {
	herald := campaignStandIn()
	defer herald.Close()
	c, err := client.New(herald.URL, client.WithDevCaller("marketing"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	campaign, err := c.CreateCampaign(ctx, client.Campaign{
		Type: "reservation.approved", Channels: []string{"email"},
		Data:           map[string]string{"reservationUrl": "https://example.com/r/spring"},
		IdempotencyKey: "spring-2026",
	})
	if err != nil {
		log.Fatal(err)
	}
	users := make([]string, 2500)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	for n := 0; n*client.MaxChunk < len(users); n++ {
		chunk := users[n*client.MaxChunk : min((n+1)*client.MaxChunk, len(users))]
		if _, err := c.AddRecipients(ctx, campaign.ID, int64(n), chunk); err != nil {
			log.Fatal(err) // a retry of the same chunk is safe
		}
	}
	started, err := c.StartCampaign(ctx, campaign.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(started.Status, started.Recipients)
	// Output: running 2500
}

// batchStandIn answers a batch as Herald does when its invocation runs out of
// time: the last item of the first request is 503 "timeout" (not stored);
// every later request is stored.
func batchStandIn() *httptest.Server {
	var requests atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Notifications []struct {
				IdempotencyKey string `json:"idempotencyKey"`
			} `json:"notifications"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		first := requests.Add(1) == 1
		results := make([]map[string]any, len(req.Notifications))
		for i, n := range req.Notifications {
			results[i] = map[string]any{"index": i, "status": 202, "idempotencyKey": n.IdempotencyKey, "id": "n-" + n.IdempotencyKey}
			if first && i == len(req.Notifications)-1 {
				results[i] = map[string]any{"index": i, "status": 503, "idempotencyKey": n.IdempotencyKey,
					"problem": map[string]any{"status": 503, "code": "timeout", "title": "Timed out"}}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMultiStatus)
		_ = json.NewEncoder(w).Encode(map[string]any{"results": results})
	}))
}

// A batch answers each item on its own. Items answered 503 "timeout" (or
// another 5xx) were not stored: SendBatch sends them again with their keys.
// Any still Retryable when its attempts run out are sent again by the caller,
// from the same slice: SendBatch wrote each item's key into it, so nothing
// can be stored twice.
func ExampleClient_SendBatch() {
	herald := batchStandIn()
	defer herald.Close()
	c, err := client.New(herald.URL, client.WithDevCaller("billing"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	batch := []client.Notification{
		{Type: "otp.code", Recipient: client.Recipient{UserID: "u1"}, Data: map[string]string{"code": "1"}, IdempotencyKey: "otp-u1"},
		{Type: "otp.code", Recipient: client.Recipient{UserID: "u2"}, Data: map[string]string{"code": "2"}, IdempotencyKey: "otp-u2"},
	}
	results, err := c.SendBatch(ctx, batch)
	if err != nil {
		log.Fatal(err) // sending batch again later is safe: it holds the keys
	}
	// Later (the next run, a queue): what is still Retryable, with its key.
	var again []client.Notification
	var at []int
	for _, r := range results {
		if r.Retryable() {
			again, at = append(again, batch[r.Index]), append(at, r.Index)
		}
	}
	if len(again) > 0 {
		retried, err := c.SendBatch(ctx, again)
		if err != nil {
			log.Fatal(err)
		}
		for i, r := range retried {
			r.Index = at[i]
			results[at[i]] = r
		}
	}
	for _, r := range results {
		fmt.Println(r.Index, r.Status, r.ID)
	}
	// Output:
	// 0 202 n-otp-u1
	// 1 202 n-otp-u2
}
