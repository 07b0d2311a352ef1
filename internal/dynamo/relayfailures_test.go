package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/recovery"
)

// TestRelayFailureNotes: the notes of one on-failure record's sequence range
// come back from the table, whatever their shard and day (within the
// widened arrival window) and length of sequence number, in sequence order;
// notes outside the range or the window do not; a retry's note overwrites.
func TestRelayFailureNotes(t *testing.T) {
	s, db, _ := newStore(t)
	ctx := context.Background()
	base := time.Now().UnixNano() // apart from any other run's notes
	seqOf := func(i int) string { return fmt.Sprintf("%d%06d", base, i) }
	at := t0.Truncate(24 * time.Hour).Add(23*time.Hour + 59*time.Minute + 55*time.Second) // the range crosses midnight
	for i := range 20 {
		f := recovery.RelayFailure{SequenceNumber: seqOf(i), At: at.Add(time.Duration(i) * time.Second), PK: "N#n" + fmt.Sprint(i), SK: "N", NotificationID: fmt.Sprint("n", i)}
		if i%5 == 4 {
			f.NotificationID, f.SK = "", "D#email" // an event record's note
		}
		if err := s.NoteRelayFailure(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	// A retry of record 3 writes its note again: still one note.
	if err := s.NoteRelayFailure(ctx, recovery.RelayFailure{SequenceNumber: seqOf(3), At: at.Add(3 * time.Second), PK: "N#n3", SK: "N", NotificationID: "n3"}); err != nil {
		t.Fatal(err)
	}
	// A shorter sequence number (an older shard's) sorts before, not inside.
	if err := s.NoteRelayFailure(ctx, recovery.RelayFailure{SequenceNumber: "9", At: at, PK: "N#short", SK: "N", NotificationID: "short"}); err != nil {
		t.Fatal(err)
	}

	got, err := s.RelayFailures(ctx, at.Add(2*time.Second), at.Add(12*time.Second), seqOf(2), seqOf(12))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 11 {
		t.Fatalf("%d notes, want 11 (2..12): %+v", len(got), got)
	}
	for k, f := range got {
		i := k + 2
		if f.SequenceNumber != seqOf(i) || f.PK != "N#n"+fmt.Sprint(i) {
			t.Errorf("note %d = %+v, want sequence %s", k, f, seqOf(i))
		}
		if want := fmt.Sprint("n", i); i%5 != 4 && (f.NotificationID != want || f.SK != "N") {
			t.Errorf("note %d: notification %q sk %q, want %s, N", k, f.NotificationID, f.SK, want)
		}
		if i%5 == 4 && (f.NotificationID != "" || f.SK != "D#email") {
			t.Errorf("note %d of an event record: %+v", k, f)
		}
		if !f.At.Equal(at.Add(time.Duration(i) * time.Second)) {
			t.Errorf("note %d at %s", k, f.At)
		}
	}
	// The stored item: key, TTL (the DLQ's 14 days and a day).
	sk := fmt.Sprintf("%040s", seqOf(0))
	found := false
	for shard := range dynamo.RelayFailureShards {
		if item := rawItem(t, db, s.Name(), fmt.Sprintf("RF#20260302#%d", shard), sk); item != nil {
			found = true
			if ttl := numAttr(t, item, "ttl"); ttl != fmt.Sprint(at.Add(dynamo.RelayFailureKeep).Unix()) {
				t.Errorf("ttl %s", ttl)
			}
		}
	}
	if !found {
		t.Errorf("no note item RF#20260302#<shard> / %s", sk)
	}
	// A window two days off finds nothing; so does a range with no notes.
	if got, err := s.RelayFailures(ctx, at.Add(72*time.Hour), at.Add(73*time.Hour), seqOf(0), seqOf(19)); err != nil || len(got) != 0 {
		t.Errorf("notes three days later: %+v, %v", got, err)
	}
	if got, err := s.RelayFailures(ctx, at, at, seqOf(100), seqOf(200)); err != nil || len(got) != 0 {
		t.Errorf("notes of an empty range: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "replan-n1", "12a", fmt.Sprintf("%041d", 1)} {
		if err := s.NoteRelayFailure(ctx, recovery.RelayFailure{SequenceNumber: bad, At: at}); err == nil {
			t.Errorf("sequence number %q accepted", bad)
		}
	}
}
