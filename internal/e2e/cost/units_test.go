package cost

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// unitsPerNotification is what one notification of each kind consumes in
// DynamoDB capacity units, by "<read|write> <Operation> <table|index>", on
// DynamoDB Local with the runner's functions (the cost benchmark's
// scenarios). The figures are deterministic: item sizes do not vary between
// notifications of a kind (UUID-shaped user ids, fixed-width times). A
// change that adds or grows a read or write fails
// TestCapacityUnitsPerNotification; when the change is meant, update the
// figures here (and re-record internal/capacity/testdata/measured.json with
// make bench, and the figures in docs/benchmarks.md). The in-flight watch's
// write (one per relay batch and priority) is bounded apart, since it
// depends on how the stream batches records. A channel sent at once has no
// delivery PutItem: the worker's claim (an UpdateItem) creates it; only a
// skipped, dropped or deferred delivery is put by the relay
// (reservation.approved-nopush's skipped push). A NORMAL or LOW kind that
// is neither mandatory nor high priority adds the notification budget's one
// UpdateItem per notification (a full budget item is one write unit). Every
// update of a delivery writes its copy in gsi2 too (a recipient's history,
// H#<caller>#<user>): a claim and an outcome per delivery sent.
var unitsPerNotification = map[string]map[string]float64{
	"email": {
		"read BatchGetItem table": 3,
		"write PutItem table":     1, "write PutItem gsi2": 1,
		"write UpdateItem table": 4, "write UpdateItem gsi2": 2,
	},
	"email-batch": {
		"read BatchGetItem table": 3,
		"write PutItem table":     1, "write PutItem gsi2": 1,
		"write UpdateItem table": 4, "write UpdateItem gsi2": 2,
	},
	"sms": {
		"read BatchGetItem table": 2,
		"write PutItem table":     1, "write PutItem gsi2": 1,
		"write UpdateItem table": 2, "write UpdateItem gsi2": 2,
	},
	"sms-batch": {
		"read BatchGetItem table": 2,
		"write PutItem table":     1, "write PutItem gsi2": 1,
		"write UpdateItem table": 2, "write UpdateItem gsi2": 2,
	},
	"push": {
		"read GetItem table": 1, "read Query table": 2,
		"write PutItem table": 1, "write PutItem gsi2": 1,
		"write UpdateItem table": 4, "write UpdateItem gsi2": 2,
	},
	"push-batch": {
		"read GetItem table": 1, "read Query table": 2,
		"write PutItem table": 1, "write PutItem gsi2": 1,
		"write UpdateItem table": 4, "write UpdateItem gsi2": 2,
	},
	"reservation.approved": {
		"read BatchGetItem table": 2, "read GetItem table": 1, "read Query table": 2,
		"write PutItem table": 1, "write PutItem gsi2": 1,
		"write UpdateItem table": 7, "write UpdateItem gsi2": 4,
	},
	"invoice.payment_failed": {
		"read BatchGetItem table": 2, "read GetItem table": 1, "read Query table": 2,
		"write PutItem table": 1, "write PutItem gsi2": 1,
		"write UpdateItem table": 4, "write UpdateItem gsi2": 4,
	},
	"security.login_alert": {
		"read BatchGetItem table": 5,
		"write PutItem table":     1, "write PutItem gsi2": 1,
		"write UpdateItem table": 4, "write UpdateItem gsi2": 4,
	},
	"reservation.approved-nopush": {
		"read BatchGetItem table": 2, "read Query table": 1,
		"write PutItem table": 2, "write PutItem gsi2": 2,
		"write UpdateItem table": 4, "write UpdateItem gsi2": 2,
	},
}

// TestCapacityUnitsPerNotification sends a few notifications of every kind
// and compares the capacity units each consumed, per operation, with
// unitsPerNotification.
func TestCapacityUnitsPerNotification(t *testing.T) {
	st := stacktest.Stack(t)
	const n = 4
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			u, got := measure(t, st, sc, n, nil, nil)
			// Delivery events (DeliveryEvents all, no SES feedback locally):
			// one PutEvents entry per delivery, as the capacity model counts.
			if u.EventEntries != float64(len(sc.channels)) {
				t.Errorf("kind %s: %g PutEvents entries per notification, want %d (one per delivery)", sc.name, u.EventEntries, len(sc.channels))
			}
			maps.DeleteFunc(got, func(_ string, v float64) bool { return v == 0 }) // a call that read nothing
			want, ok := unitsPerNotification[sc.name]
			if !ok {
				t.Errorf("kind %s has no figures in unitsPerNotification; measured:\n%s", sc.name, figures(got))
				return
			}
			// The in-flight watch is one write per relay batch and priority
			// (not per notification): between none and one unit per
			// notification on the table and on gsi3, whatever the batching.
			for _, k := range []string{"write PutItem(watch) table", "write PutItem(watch) gsi3"} {
				if v := got[k]; v <= 0 || v > 1 {
					t.Errorf("kind %s, %s: %g units per notification, want more than 0 and at most 1", sc.name, k, v)
				}
				delete(got, k)
			}
			// A channel worker re-reads its provider's breaker at most every
			// 5 s an instance (failover.DefaultRules.Refresh), whatever it sends: at
			// most half a unit a read, never more than one per notification.
			if v := got["read GetItem(breaker) table"]; v > 1 {
				t.Errorf("kind %s: breaker reads %g units per notification, want at most 1", sc.name, v)
			}
			delete(got, "read GetItem(breaker) table")
			for _, k := range slices.Sorted(maps.Keys(joinKeys(got, want))) {
				if got[k] != want[k] {
					t.Errorf("kind %s, %s: %g units per notification, want %g", sc.name, k, got[k], want[k])
				}
			}
			if t.Failed() {
				t.Logf("kind %s measured (for unitsPerNotification):\n%s", sc.name, figures(got))
			}
		})
	}
}

func joinKeys(a, b map[string]float64) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// figures prints units as unitsPerNotification's entries.
func figures(u map[string]float64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(u)) {
		fmt.Fprintf(&b, "\t\t%q: %g,\n", k, u[k])
	}
	return b.String()
}
