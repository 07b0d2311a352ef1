package webpush

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestValidateSubscriptionRefusesWhatIsNotAPushService(t *testing.T) {
	ua := newTestUserAgent(t, "https://fcm.googleapis.com/fcm/send/abc")
	local, err := ParseHostList("127.0.0.1:3000,localhost:3400")
	if err != nil {
		t.Fatal(err)
	}
	sinkHosts, err := ParseHostList("fcm.googleapis.com,127.0.0.1:3000/_dev/push/endpoints/")
	if err != nil {
		t.Fatal(err)
	}
	sinkOnly := ValidationOptions{AllowInsecureLoopback: true, Hosts: sinkHosts}
	for _, tc := range []struct {
		endpoint string
		opts     ValidationOptions
		want     error // nil: accepted
	}{
		// The default list: the push services of Chrome, Firefox, Safari, Edge.
		{endpoint: "https://fcm.googleapis.com/fcm/send/abc"},
		{endpoint: "https://FCM.googleapis.com:443/wp/abc"},
		{endpoint: "https://updates.push.services.mozilla.com/wpush/v2/gAAA"},
		{endpoint: "https://web.push.apple.com/QGx"},
		{endpoint: "https://wns2-par02p.notify.windows.com/w/?token=x"},
		{endpoint: "https://notify.windows.com/w/", want: ErrEndpointNotAllowed}, // "*." admits subdomains only
		{endpoint: "https://fcm.googleapis.com:8443/fcm/send/abc", want: ErrEndpointNotAllowed},
		{endpoint: "https://fcm.googleapis.com.evil.example/x", want: ErrEndpointNotAllowed},
		{endpoint: "https://evilfcm.googleapis.com/x", want: ErrEndpointNotAllowed},
		{endpoint: "https://fcm.googleapis.com./x", want: ErrEndpointNotAllowed},
		{endpoint: "https://push.example.net/x", want: ErrEndpointNotAllowed},
		{endpoint: "https://localhost:3400/x", want: ErrEndpointNotAllowed},
		{endpoint: "https://169.254.169.254/latest/meta-data/", want: ErrEndpointNotAllowed},
		{endpoint: "https://10.0.0.1/", want: ErrEndpointNotAllowed},
		{endpoint: "https://[::1]/", want: ErrEndpointNotAllowed},
		{endpoint: "https://2852039166/", want: ErrEndpointNotAllowed},
		{endpoint: "https://0xA9FEA9FE/", want: ErrEndpointNotAllowed},
		{endpoint: "https://0251.0376.0251.0376/", want: ErrEndpointNotAllowed},
		{endpoint: "https://127.1/", want: ErrEndpointNotAllowed},
		{endpoint: "https://127.0.0.1:22/", want: ErrEndpointNotAllowed},
		{endpoint: "https://[::ffff:127.0.0.1]/", want: ErrEndpointNotAllowed},
		{endpoint: "https://[::ffff:a9fe:a9fe]/", want: ErrEndpointNotAllowed},
		{endpoint: "https://[fe80::1%25eth0]/", want: ErrEndpointNotAllowed},
		{endpoint: "https://fcm.googleapis.com%2F@10.0.0.1/", want: ErrInvalidEndpoint},
		{endpoint: "https://user@fcm.googleapis.com/x", want: ErrInvalidEndpoint},
		{endpoint: "http://fcm.googleapis.com/x", want: ErrInvalidEndpoint},
		// The local runner's explicit configuration: its list and the loopback option.
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints/1", opts: ValidationOptions{AllowInsecureLoopback: true, Hosts: local}},
		{endpoint: "http://localhost:3400/e", opts: ValidationOptions{AllowInsecureLoopback: true, Hosts: local}},
		{endpoint: "http://127.0.0.1:3001/e", opts: ValidationOptions{AllowInsecureLoopback: true, Hosts: local}, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/e", opts: ValidationOptions{Hosts: local}, want: ErrInvalidEndpoint},
		{endpoint: "http://2130706433:3000/e", opts: ValidationOptions{AllowInsecureLoopback: true, Hosts: local}, want: ErrEndpointNotAllowed},
		{endpoint: "https://fcm.googleapis.com/fcm/send/abc", opts: ValidationOptions{AllowInsecureLoopback: true, Hosts: local}, want: ErrEndpointNotAllowed},
		// An entry with a path admits that path only: the local push
		// service's endpoints, not the runner's other routes on its address.
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints/1", opts: sinkOnly},
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints/1?x=y", opts: sinkOnly},
		{endpoint: "http://127.0.0.1:3000/_dev/faults", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_dev/scheduler/run", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_dev/push/faults", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints/", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints/../../faults", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints/%2e%2e/%2e%2e/faults", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints/a%2F..%2F..%2Ffaults", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints//x", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_dev/push/endpoints/./x", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3000/_DEV/push/endpoints/1", opts: sinkOnly, want: ErrEndpointNotAllowed},
		{endpoint: "http://127.0.0.1:3001/_dev/push/endpoints/1", opts: sinkOnly, want: ErrEndpointNotAllowed},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			s := ua.sub
			s.Endpoint = tc.endpoint
			err := ValidateSubscription(s, tc.opts)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalidEndpoint) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var se *SubscriptionError
			if !errors.As(err, &se) || se.Field != "endpoint" {
				t.Fatalf("err = %#v, want a *SubscriptionError on endpoint", err)
			}
		})
	}
}

func TestParseHostList(t *testing.T) {
	for _, tc := range []struct {
		in    string
		valid bool
	}{
		{"", true},
		{DefaultPushServices, true},
		{" fcm.googleapis.com , *.push.apple.com ", true},
		{"localhost:3400", true},
		{"127.0.0.1:3000", true},
		{"[::1]:3000", true},
		{"*", false},
		{"*.com", false},
		{"fcm.*.com", false},
		{"10.0.0.1", false},
		{"2852039166", false},
		{"host:port", false},
		{"host:0", false},
		{"https://fcm.googleapis.com", false},
		{"a,,b", false},
		{"127.0.0.1:3000/_dev/push/endpoints/", true},
		{"push.example.net/wp/", true},
		{"127.0.0.1:3000/", true},
		{"127.0.0.1:3000/_dev/push/endpoints", false},
		{"127.0.0.1:3000/_dev/../faults/", false},
		{"127.0.0.1:3000//x/", false},
		{"127.0.0.1:3000/./x/", false},
		{"127.0.0.1:3000/%2e%2e/", false},
	} {
		_, err := ParseHostList(tc.in)
		if (err == nil) != tc.valid {
			t.Errorf("ParseHostList(%q) err = %v, want valid %v", tc.in, err, tc.valid)
		}
	}
}

// A name on the list that resolves to a non-public address (DNS rebinding,
// or a list naming an internal host) is refused when the Sender dials, and
// the refusal is permanent: the subscription is unusable.
func TestSendRefusesNonPublicAddressesWhenDialing(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	hosts, err := ParseHostList("localhost:" + port)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	// No Client: the Sender's own, whose dialer checks every resolved address.
	sender, err := NewSender(SenderConfig{Keys: keys, Contact: "mailto:ops@example.com", Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	ua := newTestUserAgent(t, "https://localhost:"+port+"/p")
	_, err = sender.Send(context.Background(), ua.sub, Message{TTL: time.Minute})
	if !errors.Is(err, ErrEndpointNotAllowed) || !errors.Is(err, ErrInvalidSubscription) {
		t.Fatalf("err = %v, want ErrEndpointNotAllowed", err)
	}
	var pe *ProviderError
	if errors.As(err, &pe) && pe.Transient {
		t.Fatalf("a refused address must not be retried: %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback listener received %d requests", n)
	}
}

func TestSendChecksTheAllowListBeforeEverySend(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	// A subscription stored before the list changed, or written around the API.
	ua := newTestUserAgent(t, srv.URL+"/p")
	sender, _ := newTestSender(t, srv.Client(), time.Now(), true, "localhost:1")
	if _, err := sender.Send(context.Background(), ua.sub, Message{}); !errors.Is(err, ErrEndpointNotAllowed) {
		t.Fatalf("err = %v, want ErrEndpointNotAllowed", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("push service was called %d times", n)
	}
}

func TestPublicAddress(t *testing.T) {
	for addr, public := range map[string]bool{
		"142.250.74.10":          true,
		"17.253.144.10":          true,
		"2a00:1450:4001:80b::a":  true,
		"127.0.0.1":              false,
		"10.1.2.3":               false,
		"172.16.0.1":             false,
		"192.168.1.1":            false,
		"169.254.169.254":        false,
		"100.64.0.1":             false,
		"0.0.0.0":                false,
		"224.0.0.1":              false,
		"255.255.255.255":        false,
		"240.0.0.1":              false,
		"198.18.0.1":             false,
		"192.0.0.8":              false,
		"::1":                    false,
		"::":                     false,
		"fe80::1":                false,
		"fc00::1":                false,
		"fd12:3456::1":           false,
		"ff02::1":                false,
		"::ffff:127.0.0.1":       false,
		"::ffff:169.254.169.254": false,
		"64:ff9b::a9fe:a9fe":     false,
		"2002:7f00:1::1":         false,
		"2001:db8::1":            false,
	} {
		if got := dialable(mustAddr(t, addr), false); got != public {
			t.Errorf("dialable(%s) = %v, want %v", addr, got, public)
		}
	}
	if !dialable(mustAddr(t, "127.0.0.1"), true) || !dialable(mustAddr(t, "::1"), true) {
		t.Error("loopback must be dialable when the local push service is allowed")
	}
	if dialable(mustAddr(t, "10.0.0.1"), true) {
		t.Error("allowing loopback must not allow private addresses")
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
