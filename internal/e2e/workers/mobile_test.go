package workers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/smssink"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// Native mobile push end to end: devices registered through the API (the Go
// client), SNS platform endpoints in the runner's SNS, one Publish per device
// from the push function, with web subscriptions as other targets of the
// same push delivery.

func apnsToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func fcmToken() string { return "fcm:" + apnsToken()[:40] }

func tokenFor(platform string) string {
	if platform == client.PlatformFCM {
		return fcmToken()
	}
	return apnsToken()
}

func appARN(platform string) string {
	return devstack.LocalPlatformApplications[map[string]string{
		client.PlatformAPNs: "ApnsApplicationArn", client.PlatformAPNsSandbox: "ApnsSandboxApplicationArn", client.PlatformFCM: "FcmApplicationArn",
	}[platform]]
}

// registerDevice registers a device for user and returns its id.
func registerDevice(t testing.TB, user, platform, token string) *client.DeviceRef {
	t.Helper()
	ref, err := stacktest.Client(t, "svc").RegisterDevice(context.Background(), user, client.Device{Platform: platform, Token: token, App: "e2e"})
	if err != nil {
		t.Fatalf("register %s device for %s: %v", platform, user, err)
	}
	return ref
}

func mobileSink(t testing.TB) *smssink.Sink { return stacktest.Stack(t).SMS }

// mobileTo lists the captured publishes to a device, oldest first.
func mobileTo(t testing.TB, deviceID string) []smssink.MobileMessage {
	t.Helper()
	var out struct {
		Messages []smssink.MobileMessage `json:"messages"`
	}
	stacktest.Do(t, http.MethodGet, "/_dev/mobile-push", nil).JSON(t, &out)
	var mine []smssink.MobileMessage
	for _, m := range out.Messages {
		if m.DeviceID == deviceID {
			mine = append([]smssink.MobileMessage{m}, mine...)
		}
	}
	return mine
}

func userDevices(t testing.TB, user string) []string {
	t.Helper()
	u, err := stacktest.Client(t, "svc").GetUser(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range u.Devices {
		ids = append(ids, d.DeviceID)
	}
	return ids
}

// mobileUser has a Japanese profile, a web subscription and one device per
// platform given.
type mobileUser struct {
	id      string
	web     subscription
	devices map[string]string // platform → device id
}

func newMobileUser(t *testing.T, platforms ...string) mobileUser {
	t.Helper()
	u := mobileUser{id: stacktest.UniqueID("mobile"), devices: map[string]string{}}
	if resp := stacktest.Do(t, http.MethodPut, "/v1/users/"+u.id, map[string]any{"locale": "ja"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT user = %d %s", resp.StatusCode, resp.Body)
	}
	u.web = pushSubscription(t, u.id)
	for _, p := range platforms {
		u.devices[p] = registerDevice(t, u.id, p, tokenFor(p)).DeviceID
	}
	return u
}

// paymentFailed is a high-priority push for user (title localized by the
// profile's locale).
func paymentFailed(user string) map[string]any {
	return map[string]any{"type": "invoice.payment_failed", "recipient": map[string]any{"userId": user}, "channels": []string{"push"},
		"data": map[string]any{"invoiceUrl": "https://example.com/i/" + user}}
}

func TestMobilePushReachesEveryDeviceAndBrowser(t *testing.T) {
	u := newMobileUser(t, client.PlatformAPNs, client.PlatformAPNsSandbox, client.PlatformFCM)
	id := stacktest.Notify(t, paymentFailed(u.id))
	d := waitStatus(t, id, domain.ChannelPush, domain.StatusSent)
	wantOutcome(t, d, domain.StatusSent, domain.ReasonNone, 1)
	want := []string{u.web.ID, u.devices[client.PlatformAPNs], u.devices[client.PlatformAPNsSandbox], u.devices[client.PlatformFCM]}
	if got := slices.Sorted(slices.Values(d.SentTargets)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("sent targets %v, want %v", got, want)
	}
	status, err := stacktest.Client(t, "").GetNotification(context.Background(), id)
	if err != nil || status.Deliveries["push"].TargetsReached != 4 {
		t.Errorf("GET /v1/notifications: push %+v, %v; want 4 targets reached", status.Deliveries["push"], err)
	}
	url := "https://example.com/i/" + u.id
	if web := pushesTo(t, u.web.SinkID); len(web) != 1 || web[0].Payload.Title != "お支払いに失敗しました" || web[0].Urgency != "high" {
		t.Errorf("web pushes %+v", web)
	}
	for _, p := range []string{client.PlatformAPNs, client.PlatformAPNsSandbox} {
		msgs := mobileTo(t, u.devices[p])
		if len(msgs) != 1 {
			t.Fatalf("%s: %d publishes, want 1", p, len(msgs))
		}
		m := msgs[0]
		var payload struct {
			APS struct {
				Alert    struct{ Title, Body string }
				ThreadID string `json:"thread-id"`
			} `json:"aps"`
			ID, URL string
		}
		if err := json.Unmarshal(m.Payload, &payload); err != nil {
			t.Fatal(err)
		}
		if m.Platform != p || m.UserID != u.id || payload.APS.Alert.Title != "お支払いに失敗しました" || payload.APS.Alert.Body == "" ||
			payload.APS.ThreadID != "invoice.payment_failed" || payload.ID != id || payload.URL != url {
			t.Errorf("%s publish %+v payload %s", p, m, m.Payload)
		}
		if m.Attributes["AWS.SNS.MOBILE.APNS.PRIORITY"] != "10" || m.Attributes["AWS.SNS.MOBILE.APNS.PUSH_TYPE"] != "alert" {
			t.Errorf("%s attributes %v, want priority 10 and push type alert", p, m.Attributes)
		}
	}
	msgs := mobileTo(t, u.devices[client.PlatformFCM])
	if len(msgs) != 1 {
		t.Fatalf("fcm: %d publishes", len(msgs))
	}
	var fcm struct {
		FCMV1Message struct {
			Message struct {
				Notification struct{ Title, Body string }
				Data         map[string]string
				Android      struct{ Priority, TTL string }
			}
		}
	}
	if err := json.Unmarshal(msgs[0].Payload, &fcm); err != nil {
		t.Fatal(err)
	}
	m := fcm.FCMV1Message.Message
	if m.Notification.Title != "お支払いに失敗しました" || m.Data["id"] != id || m.Data["url"] != url || m.Android.Priority != "HIGH" || m.Android.TTL != "3600s" {
		t.Errorf("fcm payload %s", msgs[0].Payload)
	}
}

// A permanent fault (SNS disables the endpoint) removes only that device and
// its endpoint; the other device and the browser get the push once and the
// delivery is sent. Then one device of each platform alone beside a browser,
// so that the removal runs for every application.
func TestMobilePermanentFaultRemovesOnlyThatDevice(t *testing.T) {
	for _, platforms := range [][]string{
		{client.PlatformAPNs, client.PlatformFCM}, {client.PlatformAPNs}, {client.PlatformAPNsSandbox}, {client.PlatformFCM},
	} {
		u := newMobileUser(t, platforms...)
		// The devices are published to at once: the fault hits whichever
		// publish comes first (it was taken for the lowest device id, which
		// failed about one run in two when two devices raced).
		endpoints := map[string]string{} // device id → endpoint ARN
		for _, p := range platforms {
			for _, arn := range mobileSink(t).Endpoints(appARN(p)) {
				for _, dev := range u.devices {
					if containsID(mobileSink(t).EndpointAttributes(arn)["CustomUserData"], dev) {
						endpoints[dev] = arn
					}
				}
			}
		}
		if len(endpoints) != len(platforms) {
			t.Fatalf("%v: endpoints %v for devices %v", platforms, endpoints, u.devices)
		}
		inject(t, devstack.FaultMobile, "permanent", 1)
		id := stacktest.Notify(t, paymentFailed(u.id))
		d := waitStatus(t, id, domain.ChannelPush, domain.StatusSent)
		wantOutcome(t, d, domain.StatusSent, domain.ReasonNone, 1)
		var kept []string
		stacktest.Eventually(t, settle, "the disabled device removed", func() bool {
			kept = userDevices(t, u.id)
			return len(kept) == len(platforms)-1
		})
		var gone string
		for dev := range endpoints {
			if !slices.Contains(kept, dev) {
				gone = dev
			}
		}
		if attrs := mobileSink(t).EndpointAttributes(endpoints[gone]); attrs != nil {
			t.Errorf("%v: the disabled endpoint is still there: %v", platforms, attrs)
		}
		for _, k := range kept {
			if mobileSink(t).EndpointAttributes(endpoints[k]) == nil {
				t.Errorf("%v: the endpoint of device %s, not faulted, is gone", platforms, k)
			}
		}
		for _, k := range kept {
			if n := len(mobileTo(t, k)); n != 1 {
				t.Errorf("%v: the other device got %d publishes, want 1", platforms, n)
			}
		}
		if n := len(mobileTo(t, gone)); n != 0 {
			t.Errorf("%v: the removed device got %d publishes", platforms, n)
		}
		if n := len(pushesTo(t, u.web.SinkID)); n != 1 {
			t.Errorf("%v: the browser got %d pushes, want 1", platforms, n)
		}
		stacktest.Do(t, http.MethodPost, "/_dev/faults", map[string]any{"channel": devstack.FaultMobile, "mode": "off"})
	}
}

func containsID(customUserData, deviceID string) bool {
	var v struct{ DeviceID string }
	return json.Unmarshal([]byte(customUserData), &v) == nil && v.DeviceID == deviceID
}

// A throttled device publish retries the delivery; the retry publishes to
// that device only, so every target ends with exactly one push.
func TestMobileTransientFaultIsRetriedOncePerTarget(t *testing.T) {
	u := newMobileUser(t, client.PlatformAPNs, client.PlatformFCM)
	inject(t, devstack.FaultMobile, "transient", 1)
	id := stacktest.Notify(t, paymentFailed(u.id))
	d := waitStatus(t, id, domain.ChannelPush, domain.StatusSent)
	if d.Attempts != 2 {
		t.Errorf("attempts %d, want 2 (one throttled, one retry)", d.Attempts)
	}
	for p, dev := range u.devices {
		if n := len(mobileTo(t, dev)); n != 1 {
			t.Errorf("%s device got %d publishes, want exactly 1", p, n)
		}
	}
	if n := len(pushesTo(t, u.web.SinkID)); n != 1 {
		t.Errorf("the browser got %d pushes, want exactly 1", n)
	}
	if len(d.SentTargets) != 3 {
		t.Errorf("sent targets %v, want 3", d.SentTargets)
	}
}

// Registering the same token again answers the same device and makes no
// second endpoint; a token moving to another user leaves the first (SNS's
// attribute conflict, resolved by setting the endpoint); a disabled endpoint
// is enabled again; DELETE removes device and endpoint. Each platform.
func TestDeviceRegistrationKeepsOneEndpointPerToken(t *testing.T) {
	c := stacktest.Client(t, "svc")
	ctx := context.Background()
	for _, p := range []string{client.PlatformAPNs, client.PlatformAPNsSandbox, client.PlatformFCM} {
		a, b := stacktest.UniqueID("reg-a"), stacktest.UniqueID("reg-b")
		token := tokenFor(p)
		before := len(mobileSink(t).Endpoints(appARN(p)))
		first := registerDevice(t, a, p, token)
		again := registerDevice(t, a, p, token)
		if !first.Created || again.Created || again.DeviceID != first.DeviceID {
			t.Fatalf("%s: first %+v, again %+v", p, first, again)
		}
		endpoints := mobileSink(t).Endpoints(appARN(p))
		if len(endpoints) != before+1 {
			t.Fatalf("%s: %d endpoints after registering one token twice, want %d", p, len(endpoints), before+1)
		}
		// Disabled by SNS (a refused token): registering enables it again.
		var arn string
		for _, e := range endpoints {
			if containsID(mobileSink(t).EndpointAttributes(e)["CustomUserData"], first.DeviceID) {
				arn = e
			}
		}
		mobileSink(t).DisableEndpoint(arn)
		registerDevice(t, a, p, token)
		if got := mobileSink(t).EndpointAttributes(arn)["Enabled"]; got != "true" {
			t.Errorf("%s: Enabled %q after registering a disabled endpoint again", p, got)
		}
		// Another user takes the token: the same endpoint, a leaves.
		moved := registerDevice(t, b, p, token)
		if !moved.Created || moved.DeviceID != first.DeviceID || len(mobileSink(t).Endpoints(appARN(p))) != before+1 {
			t.Errorf("%s: moved %+v, %d endpoints", p, moved, len(mobileSink(t).Endpoints(appARN(p))))
		}
		if data := mobileSink(t).EndpointAttributes(arn)["CustomUserData"]; !json.Valid([]byte(data)) || !jsonHas(data, "userId", b) {
			t.Errorf("%s: endpoint data %q after the move", p, data)
		}
		if err := c.DeleteDevice(ctx, a, first.DeviceID); err == nil {
			t.Errorf("%s: a deleted the device b holds", p)
		}
		if err := c.DeleteDevice(ctx, b, first.DeviceID); err != nil {
			t.Fatalf("%s: delete: %v", p, err)
		}
		if mobileSink(t).EndpointAttributes(arn) != nil {
			t.Errorf("%s: endpoint kept after DELETE", p)
		}
	}
}

// 25 registrations of one user at once (the outside run kept 12 to 25 of
// them): exactly 10 devices stay, and every other one's endpoint is gone.
func TestDeviceBoundHoldsUnderConcurrentRegistrations(t *testing.T) {
	c := stacktest.Client(t, "svc")
	user := stacktest.UniqueID("burst")
	const n = 25
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := c.RegisterDevice(context.Background(), user, client.Device{Platform: client.PlatformFCM, Token: fcmToken()}); err != nil {
				t.Errorf("register: %v", err)
			}
		})
	}
	wg.Wait()
	// No profile: the device list and the profile answer the devices.
	kept, err := c.ListDevices(context.Background(), user)
	if err != nil || len(kept) != domain.MaxDevicesPerUser {
		t.Fatalf("%d devices kept of %d registered at once (%v), want %d", len(kept), n, err, domain.MaxDevicesPerUser)
	}
	if got := userDevices(t, user); len(got) != len(kept) || got[0] != kept[0].DeviceID {
		t.Errorf("profile devices %v, list %v", got, kept)
	}
	var endpoints []string
	for _, arn := range mobileSink(t).Endpoints(appARN(client.PlatformFCM)) {
		if jsonHas(mobileSink(t).EndpointAttributes(arn)["CustomUserData"], "userId", user) {
			endpoints = append(endpoints, arn)
		}
	}
	if len(endpoints) != domain.MaxDevicesPerUser {
		t.Errorf("%d endpoints of the user left, want %d (the evicted devices' deleted)", len(endpoints), domain.MaxDevicesPerUser)
	}
}

func jsonHas(doc, key, value string) bool {
	var m map[string]string
	return json.Unmarshal([]byte(doc), &m) == nil && m[key] == value
}

// A user with devices only: a push preference turned off covers them too.
func TestMobileHonoursThePushPreference(t *testing.T) {
	user := stacktest.UniqueID("mobile-pref")
	dev := registerDevice(t, user, client.PlatformFCM, fcmToken())
	off := `{"preferences":{"comment.created":{"push":false}}}`
	if resp := stacktest.Do(t, http.MethodPut, "/v1/users/"+user+"/preferences", off); resp.StatusCode != http.StatusOK {
		t.Fatalf("preferences = %d %s", resp.StatusCode, resp.Body)
	}
	id := stacktest.Notify(t, map[string]any{"type": "comment.created", "recipient": map[string]any{"userId": user}, "channels": []string{"push"},
		"data": map[string]any{"url": "https://example.com/c/1", "actorLabel": "Ann"}})
	d := waitStatus(t, id, domain.ChannelPush, domain.StatusSkipped)
	if d.Reason != domain.ReasonPreference || len(mobileTo(t, dev.DeviceID)) != 0 {
		t.Errorf("delivery %s/%s, %d publishes", d.Status, d.Reason, len(mobileTo(t, dev.DeviceID)))
	}
	// And with the preference back on, a device alone is a push contact.
	if resp := stacktest.Do(t, http.MethodPut, "/v1/users/"+user+"/preferences", `{"preferences":{"comment.created":{"push":null}}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("preferences = %d %s", resp.StatusCode, resp.Body)
	}
	id = stacktest.Notify(t, map[string]any{"type": "comment.created", "recipient": map[string]any{"userId": user}, "channels": []string{"push"},
		"data": map[string]any{"url": "https://example.com/c/2", "actorLabel": "Ann"}})
	waitStatus(t, id, domain.ChannelPush, domain.StatusSent)
	if n := len(mobileTo(t, dev.DeviceID)); n != 1 {
		t.Errorf("%d publishes, want 1", n)
	}
}

// Devices follow the delivery's other rules too: escalation at send time
// (the user was in the app a moment ago → skipped) and cancel (a deferred
// push cancelled → dropped), with nothing published.
func TestMobileFollowsEscalationAndCancel(t *testing.T) {
	user := stacktest.UniqueID("mobile-rules")
	dev := registerDevice(t, user, client.PlatformAPNs, apnsToken())
	token := stacktest.Stack(t).Token(user, time.Hour)
	if resp := stacktest.Do(t, http.MethodPost, "/v1/users/"+user+"/presence", nil, "Authorization: Bearer "+token); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("presence = %d %s", resp.StatusCode, resp.Body)
	}
	mention := stacktest.Notify(t, map[string]any{"type": "comment.mentioned", "recipient": map[string]any{"userId": user}, "channels": []string{"push"},
		"data": map[string]any{"url": "https://example.com/c/1", "actorLabel": "Ann"}})
	if d := waitStatus(t, mention, domain.ChannelPush, domain.StatusSkipped); d.Reason != domain.ReasonActiveInApp {
		t.Errorf("mention: %s/%s, want skipped/active_in_app", d.Status, d.Reason)
	}
	later := paymentFailed(user)
	later["sendAt"] = stacktest.Stack(t).Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	id := stacktest.Notify(t, later)
	waitStatus(t, id, domain.ChannelPush, domain.StatusDeferred)
	if _, err := stacktest.Client(t, "").CancelNotification(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if d := waitStatus(t, id, domain.ChannelPush, domain.StatusDropped); d.Reason != domain.ReasonCancelled {
		t.Errorf("cancelled: %s/%s", d.Status, d.Reason)
	}
	if n := len(mobileTo(t, dev.DeviceID)); n != 0 {
		t.Errorf("%d publishes to the device, want none", n)
	}
}
