package push

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
)

// fakeMobile records publishes; fail answers an endpoint with an error once.
type fakeMobile struct {
	mu        sync.Mutex
	published map[string][]MobileMessage
	deleted   []string
	fail      map[string]error
	deleteErr error // answered by the next DeleteEndpoint
}

func (f *fakeMobile) Publish(_ context.Context, arn string, m MobileMessage) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err, ok := f.fail[arn]; ok {
		delete(f.fail, arn)
		return "", err
	}
	if f.published == nil {
		f.published = map[string][]MobileMessage{}
	}
	f.published[arn] = append(f.published[arn], m)
	return "sns-" + arn, nil
}

func (f *fakeMobile) DeleteEndpoint(_ context.Context, arn string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.deleteErr; err != nil {
		f.deleteErr = nil
		return err
	}
	f.deleted = append(f.deleted, arn)
	return nil
}

type deletedDevices struct {
	mu  sync.Mutex
	ids []string
	err error // answered by the next delete
}

func (d *deletedDevices) DeleteDevice(_ context.Context, userID, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if userID != "u1" {
		return errors.New("wrong user")
	}
	if err := d.err; err != nil {
		d.err = nil
		return err
	}
	d.ids = append(d.ids, id)
	return nil
}

var devices = []domain.Device{
	{ID: "dA", Platform: domain.PlatformAPNs, EndpointARN: "arn:e/apns"},
	{ID: "dS", Platform: domain.PlatformAPNsSandbox, EndpointARN: "arn:e/sandbox"},
	{ID: "dF", Platform: domain.PlatformFCM, EndpointARN: "arn:e/fcm"},
}

func mobileEnv(t *testing.T) (*env, *fakeMobile, *deletedDevices) {
	e := newEnv(t)
	m, d := &fakeMobile{fail: map[string]error{}}, &deletedDevices{}
	e.provider.WithMobile(m, d)
	return e, m, d
}

func withDevices(m *channel.Message, ds ...domain.Device) *channel.Message {
	m.Profile.Devices = ds
	return m
}

// decodePayload parses the SNS message (a default entry and the platform's
// key) and returns the platform payload.
func decodePayload(t *testing.T, m MobileMessage, key string) map[string]any {
	t.Helper()
	var outer map[string]string
	if err := json.Unmarshal([]byte(m.Message), &outer); err != nil || outer["default"] == "" {
		t.Fatalf("SNS message %s: %v (want a default entry)", m.Message, err)
	}
	var inner map[string]any
	if err := json.Unmarshal([]byte(outer[key]), &inner); err != nil {
		t.Fatalf("%s payload %q: %v", key, outer[key], err)
	}
	return inner
}

func TestMobilePayloadShapes(t *testing.T) {
	for _, tc := range []struct {
		pr       domain.Priority
		expires  time.Duration
		apnsPrio string
		fcmPrio  string
		ttl      string
	}{
		{domain.PriorityHigh, 0, "10", "HIGH", "3600"},
		{domain.PriorityNormal, 0, "5", "NORMAL", "86400"},
		{domain.PriorityHigh, 90 * time.Second, "10", "HIGH", "90"},
	} {
		e, mob, _ := mobileEnv(t)
		var exp time.Time
		if tc.expires > 0 {
			exp = e.now.Add(tc.expires)
		}
		m := withDevices(message(nil, tc.pr, exp), devices...)
		if _, err := e.provider.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.Accepted, []string{"dA", "dS", "dF"}) {
			t.Errorf("accepted %v", m.Accepted)
		}
		for _, d := range devices[:2] {
			pub := mob.published[d.EndpointARN]
			if len(pub) != 1 {
				t.Fatalf("%s: %d publishes", d.Platform, len(pub))
			}
			key := map[domain.Platform]string{domain.PlatformAPNs: "APNS", domain.PlatformAPNsSandbox: "APNS_SANDBOX"}[d.Platform]
			p := decodePayload(t, pub[0], key)
			aps := p["aps"].(map[string]any)
			alert := aps["alert"].(map[string]any)
			if alert["title"] != "Reservation confirmed" || alert["body"] != "Approved." || aps["thread-id"] != "reservation.approved" ||
				p["id"] != "n-42" || p["url"] != "https://example.com/r/1" {
				t.Errorf("%s payload %v", d.Platform, p)
			}
			ttlKey := "AWS.SNS.MOBILE.APNS.TTL"
			if d.Platform == domain.PlatformAPNsSandbox {
				ttlKey = "AWS.SNS.MOBILE.APNS_SANDBOX.TTL"
			}
			a := pub[0].Attributes
			if a[AttrAPNsPushType] != "alert" || a[AttrAPNsPriority] != tc.apnsPrio || a[ttlKey] != tc.ttl {
				t.Errorf("%s %s attributes %v, want priority %s ttl %s", d.Platform, tc.pr, a, tc.apnsPrio, tc.ttl)
			}
		}
		pub := mob.published["arn:e/fcm"]
		p := decodePayload(t, pub[0], "GCM")
		msg := p["fcmV1Message"].(map[string]any)["message"].(map[string]any)
		n, data, android := msg["notification"].(map[string]any), msg["data"].(map[string]any), msg["android"].(map[string]any)
		if n["title"] != "Reservation confirmed" || data["id"] != "n-42" || data["url"] != "https://example.com/r/1" ||
			android["priority"] != tc.fcmPrio || android["ttl"] != tc.ttl+"s" {
			t.Errorf("fcm %s payload %v", tc.pr, p)
		}
		if pub[0].Attributes["AWS.SNS.MOBILE.FCM.TTL"] != tc.ttl {
			t.Errorf("fcm attributes %v", pub[0].Attributes)
		}
	}
}

// Over 4 KB the platform payload is shortened as a Web Push payload is:
// never dropped, the id kept.
func TestMobilePayloadIsFittedNotDropped(t *testing.T) {
	for _, d := range devices {
		msg, err := BuildMobile(d.Platform, MobileContent{Payload: catalog.PushPayload{ID: "n-42", Title: "T", Body: strings.Repeat("é", 5000), URL: "https://example.com/x"},
			Priority: domain.PriorityHigh, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Payload) > MaxMobilePayload || len(msg.Payload) < MaxMobilePayload-64 || !msg.Shortened || !strings.Contains(string(msg.Payload), `"n-42"`) {
			t.Errorf("%s: %d bytes, shortened %v", d.Platform, len(msg.Payload), msg.Shortened)
		}
	}
}

// A disabled endpoint removes only that device (endpoint deleted); the other
// targets are still sent and the delivery succeeds.
func TestGoneDeviceIsRemovedOthersSent(t *testing.T) {
	e, mob, del := mobileEnv(t)
	subs := e.subscribe(t, 1)
	mob.fail["arn:e/apns"] = &MobileError{Kind: MobileGone, Code: "EndpointDisabled", Err: errors.New("disabled")}
	m := withDevices(message(subs, domain.PriorityHigh, time.Time{}), devices...)
	if _, err := e.provider.Send(context.Background(), m); err != nil {
		t.Fatalf("Send = %v, want success", err)
	}
	if !slices.Equal(del.ids, []string{"dA"}) || !slices.Equal(mob.deleted, []string{"arn:e/apns"}) {
		t.Errorf("removed devices %v endpoints %v, want dA only", del.ids, mob.deleted)
	}
	if len(e.sink.Messages()) != 1 || len(mob.published["arn:e/fcm"]) != 1 || len(mob.published["arn:e/sandbox"]) != 1 {
		t.Errorf("others not sent once: web %d, fcm %d, sandbox %d", len(e.sink.Messages()), len(mob.published["arn:e/fcm"]), len(mob.published["arn:e/sandbox"]))
	}
	// Only a gone device: dropped, no contact left.
	e2, mob2, _ := mobileEnv(t)
	mob2.fail["arn:e/fcm"] = &MobileError{Kind: MobileGone, Code: "EndpointDisabled", Err: errors.New("disabled")}
	_, err := e2.provider.Send(context.Background(), withDevices(message(nil, domain.PriorityHigh, time.Time{}), devices[2]))
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Drop || pe.Reason != domain.ReasonNoContact {
		t.Errorf("only target gone: %v", err)
	}
}

// A throttled device fails the send transiently; the targets reached are
// reported and the retry publishes to the throttled device only.
func TestThrottledDeviceRetriesOnlyItself(t *testing.T) {
	e, mob, _ := mobileEnv(t)
	subs := e.subscribe(t, 1)
	mob.fail["arn:e/fcm"] = &MobileError{Kind: MobileTransient, Code: "Throttled", Err: errors.New("slow down")}
	m := withDevices(message(subs, domain.PriorityHigh, time.Time{}), devices...)
	_, err := e.provider.Send(context.Background(), m)
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Transient || pe.Code != "Throttled" || !pe.Throttle() {
		t.Fatalf("Send = %v, want transient Throttled", err)
	}
	retry := withDevices(message(subs, domain.PriorityHigh, time.Time{}), devices...)
	retry.SentTargets = m.Accepted
	if _, err := e.provider.Send(context.Background(), retry); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(retry.Accepted, []string{"dF"}) {
		t.Errorf("retry accepted %v, want dF only", retry.Accepted)
	}
	for arn, pubs := range mob.published {
		if len(pubs) != 1 {
			t.Errorf("%s published %d times, want once", arn, len(pubs))
		}
	}
	if len(e.sink.Messages()) != 1 {
		t.Errorf("web push sent %d times", len(e.sink.Messages()))
	}
	// A publish the platform application refuses (its credentials) is the
	// account's condition: transient, with the operator's alert.
	e3, mob3, _ := mobileEnv(t)
	mob3.fail["arn:e/apns"] = &MobileError{Kind: MobileTransient, Code: "PlatformApplicationDisabled", Alert: true, Err: errors.New("disabled app")}
	_, err = e3.provider.Send(context.Background(), withDevices(message(nil, domain.PriorityHigh, time.Time{}), devices[0]))
	if !errors.As(err, &pe) || !pe.Transient || !pe.Alert || pe.Code != "PlatformApplicationDisabled" {
		t.Errorf("refused credentials: %+v", pe)
	}
}

// One device's application refuses to send while the browser got the push:
// the device is retried (the browser not), the refusal alerts the operator,
// and the device is kept.
func TestRefusedDeviceBesideAReachedTargetIsRetried(t *testing.T) {
	e, mob, del := mobileEnv(t)
	subs := e.subscribe(t, 1)
	mob.fail["arn:e/apns"] = &MobileError{Kind: MobileTransient, Code: "PlatformApplicationDisabled", Alert: true, Err: errors.New("disabled app")}
	m := withDevices(message(subs, domain.PriorityHigh, time.Time{}), devices[0])
	_, err := e.provider.Send(context.Background(), m)
	var pe *channel.ProviderError
	if !errors.As(err, &pe) || !pe.Transient || !pe.Alert {
		t.Fatalf("Send = %v, want transient with an alert", err)
	}
	if !slices.Equal(m.Accepted, []string{subs[0].ID}) || len(del.ids) != 0 {
		t.Errorf("accepted %v, removed %v; want the browser reached and the device kept", m.Accepted, del.ids)
	}
}
