package domain

import "testing"

func TestCanTransition(t *testing.T) {
	tests := []struct {
		from, to Status
		want     bool
	}{
		{StatusPlanned, StatusQueued, true},
		{StatusPlanned, StatusDeferred, true},
		{StatusPlanned, StatusSkipped, true},
		{StatusDeferred, StatusQueued, true},
		{StatusQueued, StatusSending, true},
		{StatusRetrying, StatusSending, true},
		{StatusSending, StatusSent, true},
		{StatusSending, StatusRetrying, true},
		{StatusSending, StatusFailed, true},
		{StatusSent, StatusDelivered, true},
		{StatusSent, StatusSending, false},
		{StatusSent, StatusQueued, false},
		{StatusSkipped, StatusQueued, false},
		{StatusDropped, StatusSending, false},
		{StatusQueued, StatusSent, false},
		{StatusPlanned, StatusSending, true},
		{StatusDeferred, StatusSending, false},
		{StatusFailed, StatusQueued, true},
	}
	for _, tt := range tests {
		if got := CanTransition(tt.from, tt.to); got != tt.want {
			t.Errorf("CanTransition(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestSourcesOfSending(t *testing.T) {
	got := SourcesOf(StatusSending)
	want := map[Status]bool{StatusPlanned: true, StatusQueued: true, StatusRetrying: true, StatusSending: true}
	if len(got) != len(want) {
		t.Fatalf("SourcesOf(sending) = %v", got)
	}
	for _, s := range got {
		if !want[s] {
			t.Fatalf("unexpected source %s", s)
		}
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"email", "sms", "push"} {
		if _, err := ParseChannel(s); err != nil {
			t.Errorf("ParseChannel(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "EMAIL", "inapp", "fax"} {
		if _, err := ParseChannel(s); err == nil {
			t.Errorf("ParseChannel(%q) accepted", s)
		}
	}
	for _, s := range []string{"high", "normal", "low"} {
		if _, err := ParsePriority(s); err != nil {
			t.Errorf("ParsePriority(%q): %v", s, err)
		}
	}
	if _, err := ParsePriority("urgent"); err == nil {
		t.Error("ParsePriority(urgent) accepted")
	}
	if QueueName(ChannelEmail, PriorityHigh) != "email-high" {
		t.Error("QueueName")
	}
}
