package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

func draft(id string, created time.Time) *domain.Campaign {
	return &domain.Campaign{ID: id, Caller: "svc", Type: "reservation.approved", Priority: domain.PriorityLow,
		Channels: []domain.Channel{domain.ChannelEmail}, Data: map[string]any{"reservationUrl": "https://example.com/r"},
		Status: domain.CampaignDraft, CreatedAt: created, RequestHash: "h1"}
}

func mustCampaign(t *testing.T, s *stacktest.Stores, id string) *domain.Campaign {
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
			got, _, err := s.LoadWork(ctx, wm)
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

// TestCampaignHotItemsLiveApart: META stays small (no data, 1 WCU per count
// update), the data, a chunk's ids and a lot's result live on their own keys
// (docs/capacity.md).
func TestCampaignHotItemsLiveApart(t *testing.T) {
	s, db, clock := newStore(t)
	ctx := context.Background()
	c := draft("c"+uniq(t), clock.Now())
	c.Data = map[string]any{"reservationUrl": "https://example.com/r", "note": strings.Repeat("x", 4000)}
	if _, err := s.CreateCampaign(ctx, c, []string{"a", "b"}, "h"); err != nil {
		t.Fatal(err)
	}
	meta := rawItem(t, db, s.Name(), dynamo.CampaignPK(c.ID), "META")
	if _, ok := meta["data"]; ok || dynamo.ItemSize(meta) > 1024 {
		t.Errorf("META is %d bytes with data %v: want ≤ 1 KB without data", dynamo.ItemSize(meta), ok)
	}
	if got := mustCampaign(t, s, c.ID); got.Data != nil {
		t.Errorf("GetCampaign carries data %v", got.Data)
	}
	data, err := s.GetCampaignData(ctx, c.ID)
	if err != nil || data["note"] != c.Data["note"] || data["reservationUrl"] != "https://example.com/r" {
		t.Fatalf("data %v, %v", data, err)
	}
	if ids, err := s.GetChunk(ctx, c.ID, domain.InlineChunk); err != nil || len(ids) != 2 {
		t.Fatalf("inline chunk %v, %v", ids, err)
	}
	if ids := rawItem(t, db, s.Name(), dynamo.CampaignChunkPK(c.ID, domain.InlineChunk), "IDS"); len(ids) == 0 {
		t.Error("chunk ids not on their own key")
	}
	if _, err := s.StartCampaign(ctx, c.ID, "svc"); err != nil {
		t.Fatal(err)
	}
	lot := &domain.CampaignLot{Chunk: domain.InlineChunk, Total: 2, Pending: []string{"a", "b"}, Counts: domain.CampaignCounts{Notified: 2}}
	if err := s.RecordLot(ctx, c.ID, lot); err != nil {
		t.Fatal(err)
	}
	if it := rawItem(t, db, s.Name(), dynamo.CampaignLotPK(c.ID, domain.InlineChunk), "LOT"); len(it) == 0 {
		t.Error("lot result not on its own key")
	}
	if got := mustCampaign(t, s, c.ID); got.Counts.Notified != 2 {
		t.Errorf("counts %+v after the lot", got.Counts)
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
	item := rawItem(t, db, s.Name(), dynamo.CampaignChunkPK(c.ID, domain.ChunkKey(0)), "IDS")
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

// TestScanProfilesCoversEveryProfileOnce: parallel segments of the profiles
// index, paged with continuations, return every profile (PutUser's and the
// minimal one SuppressEmail creates) exactly once and nothing else: not the
// users' notifications, preferences or push subscriptions. Other tests'
// profiles share the table, so only this test's users are checked by name.
func TestScanProfilesCoversEveryProfileOnce(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	mine := map[string]bool{}
	for range 25 {
		u := uniq(t)
		mine[u] = true
		if err := s.PutUser(ctx, &domain.User{ID: u, Email: u + "@example.com"}); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s, notification("n"+uniq(t), u, clock.Now()))
	}
	suppressed := uniq(t)
	mine[suppressed] = true
	if err := s.SuppressEmail(ctx, suppressed, "gone@example.com"); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	const segments, page = 4, 7
	for seg := range segments {
		after, pages := "", 0
		for {
			ids, next, err := s.ScanProfiles(ctx, seg, segments, after, page)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) > page {
				t.Fatalf("page of %d ids, limit %d", len(ids), page)
			}
			for _, u := range ids {
				seen[u]++
			}
			pages++
			if next == "" {
				break
			}
			after = next
		}
		t.Logf("segment %d: %d pages", seg, pages)
	}
	for u := range mine {
		if seen[u] != 1 {
			t.Errorf("user %s seen %d times, want once", u, seen[u])
		}
	}
	for u, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", u, n)
		}
	}
}

// TestSegmentCampaignScanPages: the recorded segment count sticks, a page
// is stored once (a retry reads its continuation back), uploads are refused,
// and the campaign finishes only when every segment ended and every lot
// settled.
func TestSegmentCampaignScanPages(t *testing.T) {
	s, _, clock := newStore(t)
	ctx := context.Background()
	c := draft("c"+uniq(t), clock.Now())
	c.Segment = domain.SegmentAll
	if _, err := s.CreateCampaign(ctx, c, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddChunk(ctx, c.ID, "svc", domain.ChunkKey(0), []string{"a"}, "h"); !errors.Is(err, domain.ErrSegmentAudience) {
		t.Fatalf("upload to a segment campaign: %v, want ErrSegmentAudience", err)
	}
	if _, err := s.StartCampaign(ctx, c.ID, "svc"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 5} {
		if got, err := s.SetScanSegments(ctx, c.ID, n); err != nil || got != 2 {
			t.Fatalf("SetScanSegments(%d) = %d, %v; want the first, 2", n, got, err)
		}
	}
	p0, p1 := domain.ScanChunkKey(0, 0), domain.ScanChunkKey(0, 1)
	if _, ok, err := s.GetScanPage(ctx, c.ID, p0); ok || err != nil {
		t.Fatalf("page before it is stored: %v, %v", ok, err)
	}
	if err := s.RecordScanPage(ctx, c, p0, 0, []string{"a", "b"}, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordScanPage(ctx, c, p0, 0, []string{"x"}, "x"); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("page stored twice: %v, want ErrConflict", err)
	}
	if next, ok, err := s.GetScanPage(ctx, c.ID, p0); !ok || next != "b" || err != nil {
		t.Fatalf("stored page: next %q, %v, %v", next, ok, err)
	}
	if err := s.RecordScanPage(ctx, c, p1, 0, []string{"c"}, ""); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.GetChunk(ctx, c.ID, p1); err != nil || len(ids) != 1 {
		t.Fatalf("page 1 ids %v, %v", ids, err)
	}
	for _, chunk := range []string{p0, p1} {
		if err := s.RecordLot(ctx, c.ID, &domain.CampaignLot{Chunk: chunk, Total: 1, Counts: domain.CampaignCounts{Skipped: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := s.FinishCampaign(ctx, c.ID); done || err != nil {
		t.Fatalf("finished with segment 1 still scanning: %v, %v", done, err)
	}
	for range 2 { // an empty last page, marked twice, counts once
		if err := s.RecordScanPage(ctx, c, domain.ScanChunkKey(1, 0), 1, nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := s.FinishCampaign(ctx, c.ID); !done || err != nil {
		t.Fatalf("not finished after every segment and lot: %v, %v", done, err)
	}
	if got := mustCampaign(t, s, c.ID); got.Status != domain.CampaignDone || got.Chunks != 2 || got.Recipients != 3 {
		t.Fatalf("campaign %+v, want done with 2 chunks, 3 recipients", got)
	}
}

// TestProfileIndexEntryIsKeysOnly: a profile lands in the profiles index
// under its user id with its keys only (what a segment scan pages through:
// ≈ 90 bytes a user, 1,000 a page ≈ 11 RCU eventually consistent).
func TestProfileIndexEntryIsKeysOnly(t *testing.T) {
	s := stacktest.NewStores(dynamo.New(nil, "model"))
	k, err := s.UserItemKeys(&domain.User{ID: "user-000000000000000000000000000001", Email: "someone@example.com", Locale: "en", Timezone: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	if k.Index[dynamo.IndexProfiles] != "user-000000000000000000000000000001" || k.Sparse[dynamo.IndexProfiles] > 100 || k.Sparse[dynamo.IndexProfiles] >= k.Size {
		t.Fatalf("profiles index entry %q of %d bytes (item %d)", k.Index[dynamo.IndexProfiles], k.Sparse[dynamo.IndexProfiles], k.Size)
	}
	if n, err := s.NotificationItemKeys(&domain.Notification{ID: "n1", Recipient: domain.Recipient{UserID: "u1"}, CreatedAt: t0}); err != nil || n.Index[dynamo.IndexProfiles] != "" {
		t.Fatalf("a notification is in the profiles index: %+v, %v", n.Index, err)
	}
}
