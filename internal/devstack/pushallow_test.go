package devstack

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/devstack/pushsink"
	"github.com/heraldhq/herald/internal/webpush"
)

// The runner's allow-list entry for its push service admits the service's
// own endpoints only: a subscription naming another route of the runner's
// address (/_dev/faults, /_dev/scheduler/run, a dot-dot way out of the
// endpoint path) is refused, at registration and before every send (both
// check with webpush.ValidateSubscription's rules).
func TestLocalPushAllowListAdmitsTheSinkEndpointsOnly(t *testing.T) {
	const addr = "127.0.0.1:3000"
	list := localOverrides(nil, webpush.DefaultPushServices, addr)["PushEndpointAllowList"]
	hosts, err := webpush.ParseHostList(list)
	if err != nil {
		t.Fatalf("%q: %v", list, err)
	}
	opts := webpush.ValidationOptions{Hosts: hosts, AllowInsecureLoopback: true}
	sink, err := pushsink.New("http://"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, sub, err := sink.NewSubscription("")
	if err != nil {
		t.Fatal(err)
	}
	if err := webpush.ValidateSubscription(sub, opts); err != nil {
		t.Fatalf("the push service's own endpoint %s: %v", sub.Endpoint, err)
	}
	for _, path := range []string{"/_dev/faults", "/_dev/scheduler/run", "/_dev/clock", "/_dev/push/faults", "/v1/notifications",
		pushsink.EndpointPath + "../../faults", pushsink.EndpointPath + "%2e%2e/%2e%2e/faults", pushsink.EndpointPath} {
		bad := sub
		bad.Endpoint = "http://" + addr + path
		if err := webpush.ValidateSubscription(bad, opts); !errors.Is(err, webpush.ErrEndpointNotAllowed) {
			t.Errorf("%s: %v, want ErrEndpointNotAllowed", path, err)
		}
	}
	if !strings.HasPrefix(sub.Endpoint, "http://"+addr+pushsink.EndpointPath) {
		t.Fatalf("the sink's endpoint %s is not under %s", sub.Endpoint, pushsink.EndpointPath)
	}
}
