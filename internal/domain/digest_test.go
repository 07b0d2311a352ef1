package domain

import (
	"slices"
	"testing"
	"time"
)

func TestSortNewestFirst(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	ms := []DigestMember{
		{NotificationID: "a", CreatedAt: t0},
		{NotificationID: "c", CreatedAt: t0.Add(time.Minute)},
		{NotificationID: "b", CreatedAt: t0},
		{NotificationID: "d", CreatedAt: t0.Add(-time.Minute)},
	}
	SortNewestFirst(ms)
	var got []string
	for _, m := range ms {
		got = append(got, m.NotificationID)
	}
	if want := []string{"c", "b", "a", "d"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v (newest first, ties by id descending)", got, want)
	}
}
