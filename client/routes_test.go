package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// routeCall calls the client method for one service route; answer is what
// the stand-in server replies (the route's success status and a body).
type routeCall struct {
	status int
	body   string
	call   func(context.Context, *client.Client) error
}

var (
	statusJSON   = `{"id":"n1","status":"accepted","createdAt":"2026-01-02T03:04:05Z","deliveries":{}}`
	campaignJSON = `{"id":"c1","type":"t","status":"draft","createdAt":"2026-01-02T03:04:05Z"}`
	expiresAt    = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
)

// clientMethods maps each service route (template.yaml's route key) to the
// client method that calls it.
var clientMethods = map[string]routeCall{
	"POST /v1/notifications": {202, statusJSON, func(ctx context.Context, c *client.Client) error {
		_, err := c.Send(ctx, client.Notification{Type: "t", Recipient: client.Recipient{UserID: "u1"}})
		return err
	}},
	"GET /v1/users/{userId}/notifications": {200, `{"items":[]}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.ListUserNotifications(ctx, "u1", client.HistoryQuery{Type: "t", Since: expiresAt})
		return err
	}},
	"POST /v1/notifications/batch": {207, `{"results":[{"index":0,"status":202,"id":"n1"}]}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.SendBatch(ctx, []client.Notification{{Type: "t", Recipient: client.Recipient{UserID: "u1"}}})
		return err
	}},
	"GET /v1/notifications/{id}": {200, statusJSON, func(ctx context.Context, c *client.Client) error {
		_, err := c.GetNotification(ctx, "n1")
		return err
	}},
	"DELETE /v1/notifications/{id}": {200, statusJSON, func(ctx context.Context, c *client.Client) error {
		_, err := c.CancelNotification(ctx, "n1")
		return err
	}},
	"POST /v1/campaigns": {201, campaignJSON, func(ctx context.Context, c *client.Client) error {
		_, err := c.CreateCampaign(ctx, client.Campaign{Type: "t"})
		return err
	}},
	"GET /v1/campaigns/{id}": {200, campaignJSON, func(ctx context.Context, c *client.Client) error {
		_, err := c.GetCampaign(ctx, "c1")
		return err
	}},
	"DELETE /v1/campaigns/{id}": {200, campaignJSON, func(ctx context.Context, c *client.Client) error {
		_, err := c.CancelCampaign(ctx, "c1")
		return err
	}},
	"POST /v1/campaigns/{id}/recipients": {200, `{"chunk":0,"recipients":1}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.AddRecipients(ctx, "c1", 0, []string{"u1"})
		return err
	}},
	"POST /v1/campaigns/{id}/start": {202, campaignJSON, func(ctx context.Context, c *client.Client) error {
		_, err := c.StartCampaign(ctx, "c1")
		return err
	}},
	"PUT /v1/users/{userId}": {200, `{"userId":"u1"}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.PutUser(ctx, "u1", client.User{Email: "u1@example.com"})
		return err
	}},
	"GET /v1/users/{userId}": {200, `{"userId":"u1"}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.GetUser(ctx, "u1")
		return err
	}},
	"POST /v1/users/{userId}/push-subscriptions": {201, `{"id":"s1"}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.CreatePushSubscription(ctx, "u1", client.PushSubscription{Endpoint: "https://push.example/x"})
		return err
	}},
	"DELETE /v1/users/{userId}/push-subscriptions/{subscriptionId}": {204, "", func(ctx context.Context, c *client.Client) error {
		return c.DeletePushSubscription(ctx, "u1", "s1")
	}},
	"POST /v1/users/{userId}/devices": {201, `{"deviceId":"d1"}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.RegisterDevice(ctx, "u1", client.Device{Platform: client.PlatformFCM, Token: "t"})
		return err
	}},
	"GET /v1/users/{userId}/devices": {200, `{"devices":[]}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.ListDevices(ctx, "u1")
		return err
	}},
	"DELETE /v1/users/{userId}/devices/{deviceId}": {204, "", func(ctx context.Context, c *client.Client) error {
		return c.DeleteDevice(ctx, "u1", "d1")
	}},
	"GET /v1/users/{userId}/preferences": {200, `{"userId":"u1","preferences":{}}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.GetPreferences(ctx, "u1")
		return err
	}},
	"PUT /v1/users/{userId}/preferences": {200, `{"userId":"u1","preferences":{}}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.UpdatePreferences(ctx, "u1", map[string]map[string]*bool{"t": {"email": client.Disable}})
		return err
	}},
	"POST /v1/announcements": {201, `{"id":"a1"}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.CreateAnnouncement(ctx, client.Announcement{Title: "T", Body: "B", ExpiresAt: expiresAt})
		return err
	}},
	"GET /v1/announcements": {200, `{"items":[]}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.ListAnnouncements(ctx, client.Page{})
		return err
	}},
	"PUT /v1/topics/{topic}/subscribers": {200, `{"topic":"thread:42","subscribed":1,"added":1}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.Subscribe(ctx, "thread:42", []string{"u1"})
		return err
	}},
	"DELETE /v1/topics/{topic}/subscribers/{userId}": {204, ``, func(ctx context.Context, c *client.Client) error {
		return c.Unsubscribe(ctx, "thread:42", "u1")
	}},
	"GET /v1/topics/{topic}/subscribers": {200, `{"topic":"thread:42","subscribers":[]}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.ListSubscribers(ctx, "thread:42", client.Page{Limit: 10})
		return err
	}},
	"GET /v1/users/{userId}/topics": {200, `{"userId":"u1","topics":[]}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.ListUserTopics(ctx, "u1", client.Page{})
		return err
	}},
	"PUT /v1/users/{userId}/topics/{topic}": {200, `{"topic":"thread:42","muted":true,"subscribedAt":"2026-12-06T00:00:00Z"}`, func(ctx context.Context, c *client.Client) error {
		_, err := c.MuteTopic(ctx, "u1", "thread:42", true)
		return err
	}},
}

// TestEveryServiceRouteHasAClientMethod reads the service routes (those
// authorised by IAM, the API's default) from template.yaml, so a route added
// there without a client method fails here. Each method is called against a
// stand-in that records the request, which must match its route's method and
// path pattern.
func TestEveryServiceRouteHasAClientMethod(t *testing.T) {
	tmpl := stacktest.RepoTemplate(t)
	service := map[string]bool{}
	for _, r := range tmpl.Routes() {
		if r.Auth == "AWS_IAM" {
			service[r.Key()] = true
		}
	}
	if len(service) < 10 {
		t.Fatalf("template.yaml lists only %d IAM routes: the reading is wrong", len(service))
	}
	for key := range service {
		if _, ok := clientMethods[key]; !ok {
			t.Errorf("service route %s has no client method: add one to package client and to clientMethods", key)
		}
	}
	for key, rc := range clientMethods {
		if !service[key] {
			t.Errorf("clientMethods maps %s, which template.yaml does not route with IAM auth", key)
			continue
		}
		t.Run(key, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				mu.Lock()
				got = append(got, r.Method+" "+r.URL.EscapedPath())
				mu.Unlock()
				if rc.body != "" {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(rc.status)
				_, _ = io.WriteString(w, rc.body)
			}))
			defer srv.Close()
			c, err := client.New(srv.URL, client.WithDevCaller("routes"), client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 1}))
			if err != nil {
				t.Fatal(err)
			}
			if err := rc.call(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || !matchesRoute(key, got[0]) {
				t.Errorf("requests %q, want one matching %s", got, key)
			}
		})
	}
}

// matchesRoute reports whether "METHOD /path" fits a route key whose {name}
// segments match any one non-empty segment.
func matchesRoute(key, request string) bool {
	km, kp, _ := strings.Cut(key, " ")
	rm, rp, _ := strings.Cut(request, " ")
	ks, rs := strings.Split(kp, "/"), strings.Split(rp, "/")
	if km != rm || len(ks) != len(rs) {
		return false
	}
	for i := range ks {
		if strings.HasPrefix(ks[i], "{") && strings.HasSuffix(ks[i], "}") {
			if rs[i] == "" {
				return false
			}
			continue
		}
		if ks[i] != rs[i] {
			return false
		}
	}
	return true
}
