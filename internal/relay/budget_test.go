package relay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
)

// TestBudget: the catalog's NORMAL budget (5 an hour) holds the 6th
// notification of the hour: its channels open the user's budget digest
// (deferred: budget until the budget frees), the 7th joins it; a HIGH one
// and a mandatory one are never counted nor held; each notification is
// counted once, however many channels it has; a retried record changes
// nothing.
func TestBudget(t *testing.T) {
	f := newFixture(t)
	f.user("u1", nil)
	var batch []events.DynamoDBEventRecord
	for i := range 7 {
		n := reservation(fmt.Sprintf("n%d", i), "u1", nil)
		n.CreatedAt = now.Add(time.Duration(i-10) * time.Minute)
		batch = append(batch, insert(fmt.Sprint(i), n))
	}
	batch = append(batch,
		insert("h", reservation("high", "u1", func(n *domain.Notification) { n.Priority = domain.PriorityHigh })),
		insert("m", reservation("mandatory", "u1", func(n *domain.Notification) {
			n.Type, n.Data = "security.login_alert", map[string]any{"url": "https://example.com/s"}
		})))
	if failed := f.handle(t, batch...); len(failed) > 0 {
		t.Fatalf("failed %v", failed)
	}
	for i := range 5 {
		for _, c := range []domain.Channel{domain.ChannelEmail, domain.ChannelPush} {
			f.wantDelivery(t, fmt.Sprintf("n%d", i), c, domain.StatusQueued, "")
		}
	}
	// Frees when the first of the hour (accepted 10 minutes ago) is an hour old.
	frees := now.Add(-10 * time.Minute).Add(time.Hour)
	for _, c := range []domain.Channel{domain.ChannelEmail, domain.ChannelPush} {
		leader := f.wantDelivery(t, "n5", c, domain.StatusDeferred, domain.ReasonBudget)
		if leader.DigestID != "n5" || !leader.BudgetDigest || !leader.DueAt.Equal(frees) {
			t.Errorf("leader %s: digest %q (budget %v) due %s, want n5 (budget) due %s", c, leader.DigestID, leader.BudgetDigest, leader.DueAt, frees)
		}
		member := f.wantDelivery(t, "n6", c, domain.StatusDeferred, domain.ReasonBudget)
		if member.DigestID != "n5" || !member.BudgetDigest || !member.DueAt.IsZero() {
			t.Errorf("member %s: digest %q (budget %v) due %s, want n5 (budget), not due", c, member.DigestID, member.BudgetDigest, member.DueAt)
		}
	}
	f.wantDelivery(t, "high", domain.ChannelEmail, domain.StatusQueued, "")
	f.wantDelivery(t, "mandatory", domain.ChannelEmail, domain.StatusQueued, "")
	if got := f.store.MemBudgets.Calls; got != 7 {
		t.Errorf("%d budget writes, want 7 (one per NORMAL notification, none for HIGH or mandatory)", got)
	}
	sent := len(f.pub.sent)
	if failed := f.handle(t, batch[5]); len(failed) > 0 {
		t.Fatalf("retry failed %v", failed)
	}
	if len(f.pub.sent) != sent {
		t.Errorf("a retried held record sent %d messages", len(f.pub.sent)-sent)
	}
	f.wantDelivery(t, "n5", domain.ChannelEmail, domain.StatusDeferred, domain.ReasonBudget)
}

// TestBudgetOwnAndUncounted: a user's own budget replaces the catalog's;
// a notification that produces no message of its own (every channel
// skipped) is not counted.
func TestBudgetOwnAndUncounted(t *testing.T) {
	f := newFixture(t)
	f.user("u1", func(p *domain.RecipientProfile) { p.Budget = &domain.Budget{PerHour: 2, PerDay: 10} })
	f.user("u2", func(p *domain.RecipientProfile) {
		p.Preferences["reservation.approved"] = map[domain.Channel]bool{domain.ChannelEmail: false, domain.ChannelPush: false}
	})
	var batch []events.DynamoDBEventRecord
	for i := range 3 {
		batch = append(batch, insert(fmt.Sprint(i), reservation(fmt.Sprintf("n%d", i), "u1", nil)))
	}
	batch = append(batch, insert("9", reservation("off", "u2", nil)))
	if failed := f.handle(t, batch...); len(failed) > 0 {
		t.Fatalf("failed %v", failed)
	}
	f.wantDelivery(t, "n1", domain.ChannelEmail, domain.StatusQueued, "")
	f.wantDelivery(t, "n2", domain.ChannelEmail, domain.StatusDeferred, domain.ReasonBudget)
	if got := f.store.MemBudgets.Calls; got != 3 {
		t.Errorf("%d budget writes, want 3 (none for a notification with nothing to send)", got)
	}
}
