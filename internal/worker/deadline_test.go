package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
)

// ctxStore is fakeStore whose writes fail once their context has ended, as
// an SDK call does: an outcome left for after the invocation's deadline is
// never recorded.
type ctxStore struct{ *fakeStore }

func (s ctxStore) Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("update delivery %s/%s: %w", id, ch, err)
	}
	return s.fakeStore.Transition(ctx, id, ch, c)
}

// slowProvider answers after answerAfter[notification id], unless its
// context ends first: then it fails as an SDK or HTTP call does, transient.
type slowProvider struct {
	channel     domain.Channel
	answerAfter map[string]time.Duration
}

func (p slowProvider) Channel() domain.Channel { return p.channel }

func (p slowProvider) Send(ctx context.Context, m *channel.Message) (string, error) {
	t := time.NewTimer(p.answerAfter[m.Notification.ID])
	defer t.Stop()
	select {
	case <-t.C:
		return "pmid-" + m.Notification.ID, nil
	case <-ctx.Done():
		return "", &channel.ProviderError{Transient: true, Code: "transport", Err: ctx.Err()}
	}
}

// The provider call ends SendMargin before the invocation's deadline, so
// the outcome is recorded in time whatever the provider does: a provider
// answering just before that point is sent, one that would answer just
// after the function's timeout is cut off and recorded retrying — for each
// channel, the whole batch within the invocation (issue 36, defect 5).
func TestProviderCallsEndBeforeTheDeadline(t *testing.T) {
	const (
		timeout = 3 * time.Second // the invocation's
		margin  = 1500 * time.Millisecond
	)
	for _, ch := range []domain.Channel{domain.ChannelEmail, domain.ChannelSMS, domain.ChannelPush} {
		t.Run(string(ch), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, ch, Config{BackoffBase: 20 * time.Second, BackoffCap: 15 * time.Minute, MaxReceiveCount: 6, SendMargin: margin})
			h.deps.Store = ctxStore{h.store}
			h.deps.Provider = slowProvider{channel: ch, answerAfter: map[string]time.Duration{
				"before": timeout - margin - time.Second, // answers inside the send window
				"after":  timeout + 500*time.Millisecond, // would answer after the function's timeout
			}}
			h.handler = New(h.deps)
			typ := map[domain.Channel]string{domain.ChannelEmail: "reservation.approved", domain.ChannelSMS: "otp.code", domain.ChannelPush: "reservation.approved"}[ch]
			h.notification("before", typ, ch, domain.StatusQueued)
			h.notification("after", typ, ch, domain.StatusQueued)

			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			resp, err := h.handler.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m-before", "before", ch, 1), message("m-after", "after", ch, 1)}})
			elapsed := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if elapsed >= timeout {
				t.Errorf("the batch took %v, past the %v timeout", elapsed, timeout)
			}
			if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-after" {
				t.Errorf("failures %v, want only m-after (retried)", resp.BatchItemFailures)
			}
			if d := h.store.delivery("before", ch); d.Status != domain.StatusSent {
				t.Errorf("answered before the send deadline: %s, want sent", d.Status)
			}
			if d := h.store.delivery("after", ch); d.Status != domain.StatusRetrying || d.Attempts != 1 {
				t.Errorf("answering after the timeout: %s (attempts %d), want retrying, recorded before the deadline", d.Status, d.Attempts)
			}
		})
	}
}

// A message reaching its claim with less than the margin left is not
// claimed (no attempt is spent on a send that cannot finish in time): it is
// put back at once for another invocation.
func TestNoClaimWithoutTimeToSend(t *testing.T) {
	h := newHarness(t, domain.ChannelEmail, Config{BackoffBase: 20 * time.Second, BackoffCap: 15 * time.Minute, MaxReceiveCount: 6, SendMargin: 5 * time.Second})
	h.notification("n1", "reservation.approved", domain.ChannelEmail, domain.StatusQueued)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	resp, err := h.handler.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{message("m1", "n1", domain.ChannelEmail, 1)}})
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %v, %v; want the message put back", resp.BatchItemFailures, err)
	}
	if d := h.store.delivery("n1", domain.ChannelEmail); d.Status != domain.StatusQueued || d.Attempts != 0 || h.provider.sends() != 0 {
		t.Errorf("delivery %s, %d attempts, %d sends; want untouched", d.Status, d.Attempts, h.provider.sends())
	}
	if vis := h.vis.all(); len(vis) != 1 || vis[0].timeout != 0 {
		t.Errorf("visibility %v, want 0 (another invocation takes it at once)", vis)
	}
}
