package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

func draft(id string, created time.Time) *domain.Campaign {
	return &domain.Campaign{ID: id, Caller: "svc", Type: "reservation.approved", Priority: domain.PriorityLow,
		Channels: []domain.Channel{domain.ChannelEmail}, Data: map[string]any{"reservationUrl": "https://example.com/r"},
		Status: domain.CampaignDraft, CreatedAt: created, RequestHash: "h1"}
}

func mustCampaign(t *testing.T, s *dynamo.Store, id string) *domain.Campaign {
	t.Helper()
	c, err := s.GetCampaign(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCampaignLifecycle: creation (idempotent), chunks (replay, conflict,
// concurrency, not-draft), start, lot results and reconciles counted once,
// finish.
func TestCampaignLifecycle(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	id := "c" + uniq(t)
	c := draft(id, clock.Now())
	if _, err := s.CreateCampaign(ctx, c, []string{"a", "b"}, "inline-hash"); err != nil {
		t.Fatal(err)
	}
	again := draft(id, clock.Now())
	again.RequestHash = "h2"
	stored, err := s.CreateCampaign(ctx, again, nil, "")
	if !errors.Is(err, domain.ErrConflict) || stored == nil || stored.RequestHash != "h1" || stored.Recipients != 2 || stored.Chunks != 1 {
		t.Fatalf("second create: %+v, %v; want the stored draft with ErrConflict", stored, err)
	}

	// Five concurrent uploads of one chunk: one writes, the others replay.
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for range 5 {
		wg.Go(func() {
			ok, err := s.AddChunk(ctx, id, "svc", domain.ChunkKey(0), []string{"c", "d", "e"}, "h-chunk0")
			for errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrChunkConflict) {
				ok, err = s.AddChunk(ctx, id, "svc", domain.ChunkKey(0), []string{"c", "d", "e"}, "h-chunk0") // lost a race: retry
			}
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if ok {
				created++
			}
		})
	}
	wg.Wait()
	if got := mustCampaign(t, s, id); created != 1 || got.Recipients != 5 || got.Chunks != 2 {
		t.Fatalf("%d writes; campaign %d recipients in %d chunks, want 1 write, 5 in 2", created, got.Recipients, got.Chunks)
	}
	tests := []struct {
		name, caller, campaign, hash string
		want                         error
	}{
		{"other ids", "svc", id, "h-other", domain.ErrChunkConflict},
		{"another caller", "intruder", id, "h-chunk0", domain.ErrNotFound},
		{"no such campaign", "svc", "c-none", "h-chunk0", domain.ErrNotFound},
	}
	for _, tt := range tests {
		if _, err := s.AddChunk(ctx, tt.campaign, tt.caller, domain.ChunkKey(0), []string{"x"}, tt.hash); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}

	var chunks []string
	for after, more := "", true; more; {
		page, m, err := s.ListChunks(ctx, id, after, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		chunks, after, more = append(chunks, page...), page[len(page)-1], m
	}
	if strings.Join(chunks, ",") != domain.ChunkKey(0)+","+domain.InlineChunk {
		t.Fatalf("chunks %v", chunks)
	}
	if ids, err := s.GetChunk(ctx, id, domain.InlineChunk); err != nil || strings.Join(ids, ",") != "a,b" {
		t.Fatalf("inline chunk %v, %v", ids, err)
	}

	started, err := s.StartCampaign(ctx, id, "svc")
	if err != nil || started.Status != domain.CampaignRunning || started.StartedAt.IsZero() {
		t.Fatalf("start: %+v, %v", started, err)
	}
	if _, err := s.StartCampaign(ctx, id, "svc"); !errors.Is(err, domain.ErrCampaignNotDraft) {
		t.Fatalf("second start: %v, want ErrCampaignNotDraft", err)
	}
	if _, err := s.AddChunk(ctx, id, "svc", domain.ChunkKey(1), []string{"z"}, "h-1"); !errors.Is(err, domain.ErrCampaignNotDraft) {
		t.Fatalf("chunk after start: %v, want ErrCampaignNotDraft", err)
	}
	if _, err := s.AddChunk(ctx, id, "svc", domain.ChunkKey(0), []string{"c", "d", "e"}, "h-chunk0"); err != nil {
		t.Fatalf("replaying a stored chunk after start: %v, want a replay", err)
	}

	// Lot results: the first record and every reconcile count once.
	lot := &domain.CampaignLot{Chunk: domain.InlineChunk, Total: 2, Pending: []string{"a"}, Counts: domain.CampaignCounts{Notified: 1, Skipped: 1}}
	if err := s.RecordLot(ctx, id, lot); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLot(ctx, id, lot); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("second record: %v, want ErrConflict", err)
	}
	read, err := s.GetLot(ctx, id, domain.InlineChunk)
	if err != nil || read.Version != 1 || strings.Join(read.Pending, ",") != "a" || read.Counts != lot.Counts {
		t.Fatalf("lot %+v, %v", read, err)
	}
	next := &domain.CampaignLot{Chunk: domain.InlineChunk, Total: 2, Counts: domain.CampaignCounts{Notified: 1, Skipped: 1, Sent: 1}}
	if err := s.ReconcileLot(ctx, id, read, next); err != nil {
		t.Fatal(err)
	}
	if err := s.ReconcileLot(ctx, id, read, next); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("reconcile from a stale version: %v, want ErrConflict", err)
	}
	got := mustCampaign(t, s, id)
	if got.Counts != (domain.CampaignCounts{Notified: 1, Skipped: 1, Sent: 1}) || got.LotsSettled != 1 {
		t.Fatalf("campaign %+v after one lot, want notified 1, skipped 1, sent 1, one lot settled", got)
	}
	if done, err := s.FinishCampaign(ctx, id); err != nil || done {
		t.Fatalf("finish with a lot to go: %v, %v", done, err)
	}
	if err := s.RecordLot(ctx, id, &domain.CampaignLot{Chunk: domain.ChunkKey(0), Total: 3, Counts: domain.CampaignCounts{Skipped: 3}}); err != nil {
		t.Fatal(err)
	}
	if done, err := s.FinishCampaign(ctx, id); err != nil || !done {
		t.Fatalf("finish: %v, %v", done, err)
	}
	if done, _ := s.FinishCampaign(ctx, id); done {
		t.Error("finished twice")
	}
	got = mustCampaign(t, s, id)
	if got.Status != domain.CampaignDone || got.FinishedAt.IsZero() || got.Counts.Final() != got.Recipients {
		t.Fatalf("done campaign %+v", got)
	}
	if _, err := s.CancelCampaign(ctx, id, "svc"); !errors.Is(err, domain.ErrCampaignFinished) {
		t.Fatalf("cancel a done campaign: %v, want ErrCampaignFinished", err)
	}
}

// TestCancelledCampaignStopsItsNotifications: a cancelled draft drops its
// recipients at once; a cancelled running campaign makes LoadWork report its
// notifications cancelled on every read path.
func TestCancelledCampaignStopsItsNotifications(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	d := draft("c"+uniq(t), clock.Now())
	if _, err := s.CreateCampaign(ctx, d, []string{"a", "b", "c"}, "h"); err != nil {
		t.Fatal(err)
	}
	if c, err := s.CancelCampaign(ctx, d.ID, "svc"); err != nil || c.Status != domain.CampaignCancelled || c.Counts.Dropped != 3 || c.FinishedAt.IsZero() {
		t.Fatalf("cancel draft: %+v, %v", c, err)
	}
	if _, err := s.CancelCampaign(ctx, d.ID, "other"); !isNotFound(err) {
		t.Fatalf("another caller's cancel: %v, want not found", err)
	}

	c := draft("c"+uniq(t), clock.Now())
	if _, err := s.CreateCampaign(ctx, c, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartCampaign(ctx, c.ID, "svc"); err != nil {
		t.Fatal(err)
	}
	user := uniq(t)
	n := notification(domain.CampaignNotificationID(c.ID, user), user, clock.Now())
	n.CampaignID, n.CampaignChunk = c.ID, domain.InlineChunk
	mustCreate(t, s, n)
	for _, ch := range []domain.Channel{domain.ChannelEmail, domain.ChannelPush} {
		if _, err := s.CreateDelivery(ctx, &domain.Delivery{NotificationID: n.ID, Channel: ch, UserID: user, Priority: n.Priority, Status: domain.StatusQueued, UpdatedAt: clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	messages := map[string]domain.WorkMessage{
		"batch read":          {NotificationID: n.ID, Channel: domain.ChannelEmail, UserID: user, CampaignID: c.ID},
		"without campaign id": {NotificationID: n.ID, Channel: domain.ChannelEmail, UserID: user},
		"without user id":     {NotificationID: n.ID, Channel: domain.ChannelEmail},
		"push":                {NotificationID: n.ID, Channel: domain.ChannelPush, UserID: user, CampaignID: c.ID},
	}
	check := func(want domain.NotificationStatus) {
		t.Helper()
		for name, wm := range messages {
			got, _, _, err := s.LoadWork(ctx, wm)
			if err != nil || got.Status != want || got.CampaignID != c.ID {
				t.Errorf("%s: %+v, %v; want %s", name, got, err, want)
			}
		}
	}
	check(domain.NotificationAccepted)
	if _, err := s.CancelCampaign(ctx, c.ID, "svc"); err != nil {
		t.Fatal(err)
	}
	check(domain.NotificationCancelled)
	if again, err := s.CancelCampaign(ctx, c.ID, "svc"); err != nil || again.Status != domain.CampaignCancelled {
		t.Fatalf("cancel again: %+v, %v", again, err)
	}
}

// TestChunkOfAThousandLongIDsFits: the largest chunk (1,000 ids of 128
// characters) is one item well under DynamoDB's 400 KB, written with its
// campaign update in one transaction.
func TestChunkOfAThousandLongIDsFits(t *testing.T) {
	s, db, clock := newStore(t)
	ctx := context.Background()
	c := draft("c"+uniq(t), clock.Now())
	if _, err := s.CreateCampaign(ctx, c, nil, ""); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, domain.MaxChunkRecipients)
	for i := range ids {
		ids[i] = fmt.Sprintf("%0128d", i)
	}
	if _, err := s.AddChunk(ctx, c.ID, "svc", domain.ChunkKey(0), ids, "h"); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, db, s.Table(), dynamo.CampaignPK(c.ID), "R#"+domain.ChunkKey(0))
	if size := dynamo.ItemSize(item); size > 140_000 {
		t.Errorf("chunk item is %d bytes, want about 130 KB", size)
	} else {
		t.Logf("1,000 ids of 128 characters: %d bytes", size)
	}
	got, err := s.GetChunk(ctx, c.ID, domain.ChunkKey(0))
	if err != nil || len(got) != len(ids) || got[999] != ids[999] {
		t.Fatalf("read back %d ids, %v", len(got), err)
	}
}

func TestExistingProfiles(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	users := []string{uniq(t), uniq(t), uniq(t)}
	if err := s.PutUser(ctx, &domain.User{ID: users[1], Email: "x@example.com"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ExistingProfiles(ctx, users)
	if err != nil || len(got) != 1 || !got[users[1]] {
		t.Fatalf("profiles %v, %v; want only %s", got, err, users[1])
	}
}
