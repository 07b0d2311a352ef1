package devstack

import "testing"

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
