package devstack

import (
	"regexp"
	"slices"
	"testing"

	"github.com/heraldhq/herald/internal/domain"
)

// The console's overall state follows the deliveries: an accepted
// notification whose deliveries all ended is not shown as accepted.
func TestOverallState(t *testing.T) {
	d := func(statuses ...string) map[string]recentDelivery {
		m := map[string]recentDelivery{}
		for i, s := range statuses {
			m[[]string{"email", "sms", "push"}[i]] = recentDelivery{Status: s}
		}
		return m
	}
	tests := []struct {
		status string
		ds     map[string]recentDelivery
		want   string
	}{
		{"accepted", d(), "planning"},
		{"cancelled", d("dropped"), "cancelled"},
		{"accepted", d("queued", "sent"), "in progress"},
		{"accepted", d("retrying", "deferred"), "in progress"},
		{"accepted", d("deferred", "skipped"), "deferred"},
		{"accepted", d("sent", "skipped"), "sent"},
		{"accepted", d("delivered"), "sent"},
		{"accepted", d("failed", "skipped"), "failed"},
		{"accepted", d("sent", "bounced"), "partly failed"},
		{"accepted", d("dropped", "skipped"), "dropped"},
		{"accepted", d("skipped", "skipped", "skipped"), "skipped"},
	}
	for _, tt := range tests {
		if got := overallState(tt.status, tt.ds); got != tt.want {
			t.Errorf("overallState(%s, %v) = %q, want %q", tt.status, tt.ds, got, tt.want)
		}
	}
}

// The user view's filters offer what the history route takes: every
// delivery state (domain.KnownStatus) and every channel, and nothing else,
// so a filter picked in the console is never a 400.
func TestUserViewFiltersAreTheRoutes(t *testing.T) {
	page, err := consoleFiles.ReadFile("console/user.html")
	if err != nil {
		t.Fatal(err)
	}
	options := func(name string) []string {
		t.Helper()
		m := regexp.MustCompile(`<select name="` + name + `">(.*?)</select>`).FindSubmatch(page)
		if m == nil {
			t.Fatalf("user.html has no <select name=%q>", name)
		}
		var out []string
		for _, o := range regexp.MustCompile(`<option( value="")?>([a-z]*)</option>`).FindAllSubmatch(m[1], -1) {
			if len(o[1]) > 0 { // value="": any
				o[2] = nil
			}
			out = append(out, string(o[2]))
		}
		return out
	}
	statuses := options("status")
	if len(statuses) < 2 || statuses[0] != "" {
		t.Fatalf("status options %q: want any (empty) first", statuses)
	}
	// Each a delivery state, once; and every state a listed one can be
	// reached from is listed too (planned leads to all the rest).
	listed := map[domain.Status]bool{}
	for _, s := range statuses[1:] {
		if !domain.KnownStatus(domain.Status(s)) || listed[domain.Status(s)] {
			t.Errorf("status option %q: not a delivery state, or twice", s)
		}
		listed[domain.Status(s)] = true
	}
	for s := range listed {
		for _, from := range domain.SourcesOf(s) {
			if !listed[from] {
				t.Errorf("status %s is offered, %s (which leads to it) is not", s, from)
			}
		}
	}
	channels := options("channel")
	var want []string
	for _, c := range domain.Channels {
		want = append(want, string(c))
	}
	if !slices.Equal(channels[1:], want) {
		t.Errorf("channel options %q, want any then %q", channels, want)
	}
}
