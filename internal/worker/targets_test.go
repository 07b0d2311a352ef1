package worker

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/domain"
)

// targetsProvider is a push provider with three targets; fail names the
// targets that fail transiently on each call (by call index).
type targetsProvider struct {
	mu      sync.Mutex
	targets []string
	fail    []map[string]bool
	calls   [][]string // the targets each call sent to
}

func (p *targetsProvider) Channel() domain.Channel { return domain.ChannelPush }

func (p *targetsProvider) Send(_ context.Context, m *channel.Message) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var fail map[string]bool
	if len(p.calls) < len(p.fail) {
		fail = p.fail[len(p.calls)]
	}
	var tried []string
	transient := false
	for _, t := range p.targets {
		if slices.Contains(m.SentTargets, t) {
			continue
		}
		tried = append(tried, t)
		if fail[t] {
			transient = true
			continue
		}
		m.Accepted = append(m.Accepted, t)
	}
	p.calls = append(p.calls, tried)
	if transient {
		return "", &channel.ProviderError{Transient: true, Code: "Throttled"}
	}
	return "pmid", nil
}

// A transient failure of one target retries the delivery, records the
// targets already reached, and the retry sends to the failed target only.
func TestRetrySkipsTargetsAlreadyReached(t *testing.T) {
	h := newHarness(t, domain.ChannelPush, Config{})
	p := &targetsProvider{targets: []string{"s1", "dA", "dB"}, fail: []map[string]bool{{"dA": true}}}
	h.deps.Provider = p
	h.handler = New(h.deps)
	n := h.notification("n1", "comment.mentioned", domain.ChannelPush, domain.StatusQueued)

	if failed := h.handle(t, message("m1", n.ID, domain.ChannelPush, 1)); len(failed) != 1 {
		t.Fatalf("first attempt: failed %v, want the message retried", failed)
	}
	d := h.store.delivery(n.ID, domain.ChannelPush)
	if d.Status != domain.StatusRetrying || !sameSet(d.SentTargets, []string{"s1", "dB"}) {
		t.Fatalf("after the first attempt: %s with sent targets %v", d.Status, d.SentTargets)
	}
	if failed := h.handle(t, message("m1", n.ID, domain.ChannelPush, 2)); len(failed) != 0 {
		t.Fatalf("retry: failed %v", failed)
	}
	d = h.store.delivery(n.ID, domain.ChannelPush)
	if d.Status != domain.StatusSent || !sameSet(d.SentTargets, []string{"s1", "dA", "dB"}) {
		t.Errorf("after the retry: %s with sent targets %v", d.Status, d.SentTargets)
	}
	if len(p.calls) != 2 || !slices.Equal(p.calls[1], []string{"dA"}) {
		t.Errorf("calls %v, want the retry to send to dA only", p.calls)
	}
}

// Retries run out while one target keeps failing: the delivery reached the
// others, so it is sent (not failed: exhausted), and the message is done.
func TestExhaustedRetriesAfterAPartialSendRecordSent(t *testing.T) {
	h := newHarness(t, domain.ChannelPush, Config{})
	p := &targetsProvider{targets: []string{"s1", "dA"}, fail: []map[string]bool{{"dA": true}, {"dA": true}}}
	h.deps.Provider = p
	h.handler = New(h.deps)
	n := h.notification("n1", "comment.mentioned", domain.ChannelPush, domain.StatusQueued)
	h.handle(t, message("m1", n.ID, domain.ChannelPush, 1))
	if failed := h.handle(t, message("m1", n.ID, domain.ChannelPush, h.deps.Config.MaxReceiveCount)); len(failed) != 0 {
		t.Fatalf("last receive: failed %v, want done", failed)
	}
	d := h.store.delivery(n.ID, domain.ChannelPush)
	if d.Status != domain.StatusSent || d.LastError != "Throttled" {
		t.Errorf("delivery %s (%s), want sent with the last error kept", d.Status, d.LastError)
	}
	// Without any target reached, exhaustion still fails.
	h2 := newHarness(t, domain.ChannelPush, Config{})
	h2.deps.Provider = &targetsProvider{targets: []string{"dA"}, fail: []map[string]bool{{"dA": true}}}
	h2.handler = New(h2.deps)
	n2 := h2.notification("n2", "comment.mentioned", domain.ChannelPush, domain.StatusQueued)
	h2.handle(t, message("m2", n2.ID, domain.ChannelPush, h2.deps.Config.MaxReceiveCount))
	if d := h2.store.delivery(n2.ID, domain.ChannelPush); d.Status != domain.StatusFailed || d.Reason != domain.ReasonExhausted {
		t.Errorf("nothing reached: %s/%s, want failed/exhausted", d.Status, d.Reason)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// alertProvider reaches one target and finds another's provider refusing.
type alertProvider struct{}

func (alertProvider) Channel() domain.Channel { return domain.ChannelPush }
func (alertProvider) Send(_ context.Context, m *channel.Message) (string, error) {
	m.Accepted = append(m.Accepted, "s1")
	m.TargetError, m.TargetAlert = "PlatformApplicationDisabled", true
	return "pmid", nil
}

// A target whose provider refuses to send (expired credentials) alerts the
// operator and is kept in lastError, though the delivery reached another.
func TestTargetAlertIsLoggedOnASentDelivery(t *testing.T) {
	h := newHarness(t, domain.ChannelPush, Config{})
	h.deps.Provider = alertProvider{}
	h.handler = New(h.deps)
	n := h.notification("n1", "comment.mentioned", domain.ChannelPush, domain.StatusQueued)
	h.handle(t, message("m1", n.ID, domain.ChannelPush, 1))
	d := h.store.delivery(n.ID, domain.ChannelPush)
	if d.Status != domain.StatusSent || d.LastError != "PlatformApplicationDisabled" {
		t.Errorf("delivery %s lastError %q", d.Status, d.LastError)
	}
	if !strings.Contains(h.logs.String(), channel.OperatorAlert) {
		t.Error("no operator alert logged")
	}
}
