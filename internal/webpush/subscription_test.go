package webpush

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestValidateSubscription(t *testing.T) {
	ua := newTestUserAgent(t, "https://fcm.googleapis.com/fcm/send/abc123")
	point := mustDecode(t, ua.sub.P256dh)
	auth := mustDecode(t, ua.sub.Auth)
	notOnCurve := append([]byte{0x04}, make([]byte, 64)...)
	notOnCurve[64] = 1

	with := func(change func(*Subscription)) Subscription {
		s := ua.sub
		change(&s)
		return s
	}
	local, err := ParseHostList("push.example.net:8443,push.example.net,127.0.0.1:3000,localhost:3000,[::1]:3000")
	if err != nil {
		t.Fatal(err)
	}
	loopbackOK := ValidationOptions{AllowInsecureLoopback: true, Hosts: local}
	for _, tc := range []struct {
		name      string
		sub       Subscription
		opts      ValidationOptions
		wantField string // "" means valid
		wantKind  error
	}{
		{name: "browser form", sub: ua.sub},
		{name: "padded base64url", sub: with(func(s *Subscription) {
			s.P256dh = base64.URLEncoding.EncodeToString(point)
			s.Auth = base64.URLEncoding.EncodeToString(auth)
		})},
		{name: "standard base64 padded", sub: with(func(s *Subscription) {
			s.P256dh = base64.StdEncoding.EncodeToString(point)
			s.Auth = base64.StdEncoding.EncodeToString(auth)
		})},
		{name: "standard base64 unpadded", sub: with(func(s *Subscription) {
			s.P256dh = base64.RawStdEncoding.EncodeToString(point)
			s.Auth = base64.RawStdEncoding.EncodeToString(auth)
		})},
		{name: "https with port", opts: ValidationOptions{Hosts: local}, sub: with(func(s *Subscription) { s.Endpoint = "https://push.example.net:8443/p/1" })},
		{name: "http loopback allowed", opts: loopbackOK, sub: with(func(s *Subscription) { s.Endpoint = "http://127.0.0.1:3000/_dev/push/endpoints/1" })},
		{name: "http localhost allowed", opts: loopbackOK, sub: with(func(s *Subscription) { s.Endpoint = "http://localhost:3000/e" })},
		{name: "http ipv6 loopback allowed", opts: loopbackOK, sub: with(func(s *Subscription) { s.Endpoint = "http://[::1]:3000/e" })},

		{name: "missing endpoint", sub: with(func(s *Subscription) { s.Endpoint = "" }), wantField: "endpoint", wantKind: ErrInvalidEndpoint},
		{name: "relative endpoint", sub: with(func(s *Subscription) { s.Endpoint = "/push/1" }), wantField: "endpoint", wantKind: ErrInvalidEndpoint},
		{name: "unparseable endpoint", sub: with(func(s *Subscription) { s.Endpoint = "https://exa mple.com/%zz" }), wantField: "endpoint", wantKind: ErrInvalidEndpoint},
		{name: "http not loopback", opts: loopbackOK, sub: with(func(s *Subscription) { s.Endpoint = "http://push.example.net/1" }), wantField: "endpoint", wantKind: ErrInvalidEndpoint},
		{name: "http loopback not allowed", sub: with(func(s *Subscription) { s.Endpoint = "http://127.0.0.1:3000/e" }), wantField: "endpoint", wantKind: ErrInvalidEndpoint},
		{name: "other scheme", opts: loopbackOK, sub: with(func(s *Subscription) { s.Endpoint = "ftp://push.example.net/1" }), wantField: "endpoint", wantKind: ErrInvalidEndpoint},
		{name: "user info", opts: loopbackOK, sub: with(func(s *Subscription) { s.Endpoint = "https://user:pw@push.example.net/1" }), wantField: "endpoint", wantKind: ErrInvalidEndpoint},

		{name: "missing p256dh", sub: with(func(s *Subscription) { s.P256dh = "" }), wantField: "keys.p256dh", wantKind: ErrInvalidP256dh},
		{name: "p256dh not base64", sub: with(func(s *Subscription) { s.P256dh = "!!!" }), wantField: "keys.p256dh", wantKind: ErrInvalidP256dh},
		{name: "p256dh compressed point", sub: with(func(s *Subscription) {
			s.P256dh = encodeBase64URL(append([]byte{0x02 | point[64]&1}, point[1:33]...))
		}), wantField: "keys.p256dh", wantKind: ErrInvalidP256dh},
		{name: "p256dh not on curve", sub: with(func(s *Subscription) { s.P256dh = encodeBase64URL(notOnCurve) }), wantField: "keys.p256dh", wantKind: ErrInvalidP256dh},
		{name: "p256dh mixed alphabets", sub: with(func(s *Subscription) { s.P256dh = "-+" + s.P256dh[2:] }), wantField: "keys.p256dh", wantKind: ErrInvalidP256dh},

		{name: "missing auth", sub: with(func(s *Subscription) { s.Auth = "" }), wantField: "keys.auth", wantKind: ErrInvalidAuth},
		{name: "auth 15 bytes", sub: with(func(s *Subscription) { s.Auth = encodeBase64URL(auth[:15]) }), wantField: "keys.auth", wantKind: ErrInvalidAuth},
		{name: "auth 17 bytes", sub: with(func(s *Subscription) { s.Auth = encodeBase64URL(append(auth, 0)) }), wantField: "keys.auth", wantKind: ErrInvalidAuth},
		{name: "auth not base64", sub: with(func(s *Subscription) { s.Auth = "a b" }), wantField: "keys.auth", wantKind: ErrInvalidAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateSubscription(tc.sub, tc.opts)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("ValidateSubscription = %v, want nil", err)
				}
				return
			}
			var serr *SubscriptionError
			if !errors.As(err, &serr) || serr.Field != tc.wantField {
				t.Fatalf("err = %v, want SubscriptionError for %s", err, tc.wantField)
			}
			if !errors.Is(err, tc.wantKind) || !errors.Is(err, ErrInvalidSubscription) {
				t.Fatalf("err = %v, want it to match %v and ErrInvalidSubscription", err, tc.wantKind)
			}
			if strings.Contains(err.Error(), ua.sub.Auth) || strings.Contains(err.Error(), ua.sub.P256dh) {
				t.Fatalf("error message leaks key material: %v", err)
			}
		})
	}
}

func TestSubscriptionJSONIsBrowserShape(t *testing.T) {
	ua := newTestUserAgent(t, "https://updates.push.services.mozilla.com/wpush/v2/gAAAA")
	browserJSON := fmt.Sprintf(`{"endpoint":%q,"expirationTime":null,"keys":{"p256dh":%q,"auth":%q}}`,
		ua.sub.Endpoint, ua.sub.P256dh, ua.sub.Auth)

	got, err := ParseSubscription([]byte(browserJSON), ValidationOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got != ua.sub {
		t.Fatalf("ParseSubscription = %+v, want %+v", got, ua.sub)
	}

	out, err := json.Marshal(ua.sub)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q}}`, ua.sub.Endpoint, ua.sub.P256dh, ua.sub.Auth)
	if string(out) != want {
		t.Fatalf("Marshal = %s, want %s", out, want)
	}

	if _, err := ParseSubscription([]byte(`{"endpoint":"https://fcm.googleapis.com/1","keys":{"p256dh":"AAAA","auth":"AAAA"}}`), ValidationOptions{}); !errors.Is(err, ErrInvalidP256dh) {
		t.Fatalf("ParseSubscription of bad keys = %v, want ErrInvalidP256dh", err)
	}
	if _, err := ParseSubscription([]byte(`[]`), ValidationOptions{}); !errors.Is(err, ErrInvalidSubscription) {
		t.Fatalf("ParseSubscription of non-object = %v, want ErrInvalidSubscription", err)
	}
}

func TestSubscriptionFormattingHidesSecrets(t *testing.T) {
	ua := newTestUserAgent(t, "https://fcm.googleapis.com/fcm/send/secret-token")
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("sending", "subscription", ua.sub)
	for _, text := range []string{fmt.Sprint(ua.sub), fmt.Sprintf("%+v", ua.sub), logged.String()} {
		for _, secret := range []string{"secret-token", ua.sub.Auth, ua.sub.P256dh} {
			if strings.Contains(text, secret) {
				t.Errorf("%q reveals %q", text, secret)
			}
		}
		if !strings.Contains(text, "https://fcm.googleapis.com") {
			t.Errorf("%q does not name the origin", text)
		}
	}
}

func TestOrigin(t *testing.T) {
	for endpoint, want := range map[string]string{
		"https://fcm.googleapis.com/fcm/send/x":     "https://fcm.googleapis.com",
		"https://FCM.googleapis.com:443/fcm/send/x": "https://fcm.googleapis.com",
		"https://push.example.net:8443/x":           "https://push.example.net:8443",
		"http://127.0.0.1:3000/_dev/push/x":         "http://127.0.0.1:3000",
		"http://localhost:80/x":                     "http://localhost",
		"http://[::1]:3000/x":                       "http://[::1]:3000",
		"HTTPS://[2001:db8::1]/x":                   "https://[2001:db8::1]",
		"not a url at all %zz":                      "invalid-endpoint",
	} {
		if got := endpointOrigin(endpoint); got != want {
			t.Errorf("endpointOrigin(%q) = %q, want %q", endpoint, got, want)
		}
	}
}
