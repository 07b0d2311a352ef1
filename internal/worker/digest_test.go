package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/worker"
)

var digestNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// digestTableFake is a worker.Store and worker.DigestStore over fixed data.
type digestTableFake struct {
	mu       sync.Mutex
	n        *domain.Notification
	delivery domain.Delivery
	members  []domain.DigestMember
	others   map[string]domain.Notification
	sealErr  error
	sealed   int
}

func (f *digestTableFake) LoadWork(context.Context, domain.WorkMessage) (*domain.Notification, *domain.RecipientProfile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := *f.n
	return &n, &domain.RecipientProfile{User: &domain.User{ID: "u1"}, PushSubscriptions: []domain.PushSubscription{{ID: "s1"}}}, nil
}

func (f *digestTableFake) Transition(_ context.Context, _ string, _ domain.Channel, c domain.Change) (*domain.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delivery.Status, f.delivery.Reason, f.delivery.LastError = c.To, c.Reason, c.LastError
	d := f.delivery
	return &d, nil
}

func (f *digestTableFake) SealDigest(_ context.Context, k domain.DigestKey, id string) ([]domain.DigestMember, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sealErr != nil {
		return nil, f.sealErr
	}
	if k != (domain.DigestKey{UserID: "u1", Channel: domain.ChannelPush, BatchKey: "t1"}) || id != f.n.ID {
		return nil, errors.New("wrong digest")
	}
	f.sealed++
	return f.members, nil
}

func (f *digestTableFake) GetNotifications(_ context.Context, ids []string) ([]domain.Notification, error) {
	var out []domain.Notification
	for _, id := range ids {
		if n, ok := f.others[id]; ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// plainTable hides the digest methods.
type plainTable struct{ f *digestTableFake }

func (p plainTable) LoadWork(ctx context.Context, wm domain.WorkMessage) (*domain.Notification, *domain.RecipientProfile, error) {
	return p.f.LoadWork(ctx, wm)
}
func (p plainTable) Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	return p.f.Transition(ctx, id, ch, c)
}

type capturePush struct{ got []catalog.Content }

func (p *capturePush) Channel() domain.Channel { return domain.ChannelPush }
func (p *capturePush) Send(_ context.Context, m *channel.Message) (string, error) {
	p.got = append(p.got, m.Content)
	return "pm-1", nil
}

type visibilityLog struct{ delays []time.Duration }

func (v *visibilityLog) SetVisibility(_ context.Context, _, _ string, d time.Duration) error {
	v.delays = append(v.delays, d)
	return nil
}

func commentAt(id string, at time.Time) domain.Notification {
	return domain.Notification{ID: id, Type: "comment.created", Recipient: domain.Recipient{UserID: "u1"}, Priority: domain.PriorityLow,
		BatchKey: "t1", Data: map[string]any{"actorLabel": "A", "url": "https://example.com/c/" + id}, CreatedAt: at, Status: domain.NotificationAccepted}
}

func digestFixture() *digestTableFake {
	lead := commentAt("lead", digestNow.Add(-5*time.Minute))
	others := map[string]domain.Notification{}
	var members []domain.DigestMember
	for i, id := range []string{"m4", "m3", "m2", "m1"} { // newest first, as SealDigest returns them
		at := digestNow.Add(-time.Duration(i+1) * time.Minute)
		others[id] = commentAt(id, at)
		members = append(members, domain.DigestMember{NotificationID: id, CreatedAt: at})
	}
	cancelled := others["m2"]
	cancelled.Status = domain.NotificationCancelled
	others["m2"] = cancelled
	delete(others, "m1") // expired by TTL since it joined
	return &digestTableFake{
		n: &lead, others: others, members: members,
		delivery: domain.Delivery{NotificationID: "lead", Channel: domain.ChannelPush, Priority: domain.PriorityLow, Status: domain.StatusQueued, DigestID: "lead"},
	}
}

func workMessage(receives string) events.SQSEvent {
	body, _ := json.Marshal(domain.WorkMessage{NotificationID: "lead", Channel: domain.ChannelPush})
	return events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", ReceiptHandle: "rh", Body: string(body),
		EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:push-low", Attributes: map[string]string{"ApproximateReceiveCount": receives}}}}
}

func newDigestWorker(store worker.Store, vis worker.Visibility, p channel.Provider) *worker.Handler {
	return worker.New(worker.Deps{Config: worker.Config{BackoffBase: time.Second, BackoffCap: time.Minute, MaxReceiveCount: 3},
		Store: store, Visibility: vis, Provider: p, Catalog: catalog.MustLoad(),
		Now: func() time.Time { return digestNow }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func TestDigestLeaderSendsOneMessageListingItsMembers(t *testing.T) {
	f := digestFixture()
	p := &capturePush{}
	resp, err := newDigestWorker(f, &visibilityLog{}, p).Handle(context.Background(), workMessage("1"))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("Handle = %v, %v", resp, err)
	}
	if len(p.got) != 1 {
		t.Fatalf("sent %d messages, want 1", len(p.got))
	}
	c := p.got[0]
	// lead + m4 + m3 (m2 cancelled, m1 gone): newest first.
	if c.Title != "3 new comments" || c.URL != "https://example.com/c/m4" {
		t.Errorf("title %q url %q", c.Title, c.URL)
	}
	want := "There are 3 new comments on threads you follow.\nhttps://example.com/c/m4\nhttps://example.com/c/m3\nhttps://example.com/c/lead"
	if c.Body != want {
		t.Errorf("body %q, want %q", c.Body, want)
	}
	if f.delivery.Status != domain.StatusSent || f.sealed != 1 {
		t.Errorf("status %s, sealed %d times", f.delivery.Status, f.sealed)
	}
}

// budgetPush is a provider with a size budget (as push has Web Push's).
type budgetPush struct {
	capturePush
	maxBody int
}

func (p *budgetPush) Fits(c catalog.Content) bool { return len(c.Body) <= p.maxBody }

// A digest that would exceed its provider's budget lists fewer items and
// counts the rest ("and N more") instead of failing.
func TestDigestListsFewerItemsToFitTheProvidersBudget(t *testing.T) {
	f := digestFixture()
	p := &budgetPush{maxBody: len("There are 3 new comments on threads you follow.\nhttps://example.com/c/m4\n…and 2 more")}
	resp, err := newDigestWorker(f, &visibilityLog{}, p).Handle(context.Background(), workMessage("1"))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("Handle = %v, %v", resp, err)
	}
	if len(p.got) != 1 {
		t.Fatalf("sent %d messages, want 1", len(p.got))
	}
	want := "There are 3 new comments on threads you follow.\nhttps://example.com/c/m4\n…and 2 more"
	if c := p.got[0]; c.Body != want || c.Title != "3 new comments" || c.URL != "https://example.com/c/m4" {
		t.Errorf("content %+v, want body %q", c, want)
	}
}

func TestDeliveryOutsideADigestRendersItself(t *testing.T) {
	f := digestFixture()
	f.delivery.DigestID = ""
	p := &capturePush{}
	if resp, _ := newDigestWorker(f, &visibilityLog{}, p).Handle(context.Background(), workMessage("1")); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	if len(p.got) != 1 || p.got[0].Title != "New comment" || f.sealed != 0 {
		t.Errorf("sent %+v, sealed %d", p.got, f.sealed)
	}
}

func TestDigestLoadFailureIsRetried(t *testing.T) {
	tests := []struct {
		receives   string
		wantStatus domain.Status
		wantReason domain.Reason
		exhausted  bool
	}{
		{"1", domain.StatusRetrying, "", false},
		{"3", domain.StatusFailed, domain.ReasonExhausted, true}, // MaxReceiveCount: visible at once, SQS moves it to the DLQ
	}
	for _, tt := range tests {
		t.Run("receive "+tt.receives, func(t *testing.T) {
			f := digestFixture()
			f.sealErr = errors.New("throttled")
			vis := &visibilityLog{}
			p := &capturePush{}
			resp, _ := newDigestWorker(f, vis, p).Handle(context.Background(), workMessage(tt.receives))
			if len(resp.BatchItemFailures) != 1 || len(p.got) != 0 {
				t.Fatalf("failures %v, sent %v", resp.BatchItemFailures, p.got)
			}
			if f.delivery.Status != tt.wantStatus || f.delivery.Reason != tt.wantReason || f.delivery.LastError != "digest_load" {
				t.Errorf("delivery %s %s %q", f.delivery.Status, f.delivery.Reason, f.delivery.LastError)
			}
			if len(vis.delays) != 1 || (vis.delays[0] == 0) != tt.exhausted {
				t.Errorf("visibility changes %v, want one (0 when exhausted, the backoff otherwise)", vis.delays)
			}
		})
	}
}

func TestDigestWithoutDigestStoreFails(t *testing.T) {
	f := digestFixture()
	p := &capturePush{}
	resp, _ := newDigestWorker(plainTable{f}, &visibilityLog{}, p).Handle(context.Background(), workMessage("1"))
	if len(resp.BatchItemFailures) > 0 || len(p.got) > 0 {
		t.Fatalf("failures %v, sent %v", resp.BatchItemFailures, p.got)
	}
	if f.delivery.Status != domain.StatusFailed || !strings.Contains(string(f.delivery.Reason), "not_applicable") {
		t.Errorf("delivery %s %s, want failed not_applicable", f.delivery.Status, f.delivery.Reason)
	}
}
