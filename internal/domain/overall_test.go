package domain

import "testing"

// A notification accepted whose deliveries all ended is not "accepted": the
// overall state follows the deliveries.
func TestOverallOf(t *testing.T) {
	tests := []struct {
		n    NotificationStatus
		ds   []Status
		want Overall
	}{
		{NotificationAccepted, nil, OverallPlanning},
		{NotificationCancelled, []Status{StatusDropped}, OverallCancelled},
		{NotificationCancelled, []Status{StatusSent, StatusDropped}, OverallCancelled},
		{NotificationAccepted, []Status{StatusQueued, StatusSent}, OverallInProgress},
		{NotificationAccepted, []Status{Absent}, OverallInProgress},
		{NotificationAccepted, []Status{StatusRetrying, StatusDeferred}, OverallInProgress},
		{NotificationAccepted, []Status{StatusDeferred, StatusSkipped}, OverallDeferred},
		{NotificationAccepted, []Status{StatusSent, StatusSkipped}, OverallSent},
		{NotificationAccepted, []Status{StatusDelivered}, OverallSent},
		{NotificationAccepted, []Status{StatusComplained}, OverallSent},
		{NotificationAccepted, []Status{StatusFailed, StatusSkipped}, OverallFailed},
		{NotificationAccepted, []Status{StatusSent, StatusBounced}, OverallPartlyFailed},
		{NotificationAccepted, []Status{StatusDropped, StatusSkipped}, OverallDropped},
		{NotificationAccepted, []Status{StatusSkipped, StatusSkipped, StatusSkipped}, OverallSkipped},
	}
	for _, tt := range tests {
		if got := OverallOf(tt.n, tt.ds); got != tt.want {
			t.Errorf("OverallOf(%s, %v) = %q, want %q", tt.n, tt.ds, got, tt.want)
		}
	}
}
