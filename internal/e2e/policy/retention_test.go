package policy

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// Issue 36, defect 1: sendAt is accepted up to a year ahead, but the
// notification and its deferred delivery (with its due-index entry)
// expired at their creation plus RetentionDays: TTL deleted them before
// they were due, with no DLQ and no metric. Both now expire no earlier than
// the due time plus the retention.
func TestFarSendAtOutlivesTheRetention(t *testing.T) {
	st := stacktest.Stack(t)
	user := uniqueUser(t)
	sendAt := st.Clock.Now().Add(300 * 24 * time.Hour).UTC().Truncate(time.Second)
	id := stacktest.Notify(t, reservation(user, user+"@example.com", map[string]any{"sendAt": sendAt.Format(time.RFC3339)}))
	if d := waitStatus(t, id, domain.ChannelEmail, domain.StatusDeferred, 10*time.Second); !d.DueAt.Equal(sendAt) {
		t.Fatalf("deferred to %v, want sendAt %v", d.DueAt, sendAt)
	}
	floor := sendAt.Add(stacktest.Retention(t))
	for _, sk := range []string{"N", "D#email"} {
		if got := stacktest.Expiry(t, dynamo.NotificationPK(id), sk); got.Before(floor) {
			t.Errorf("%s expires %v, before sendAt + RetentionDays (%v)", sk, got, floor)
		}
	}
}
