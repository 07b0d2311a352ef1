package campaign

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
)

// TestFinishLogsTheEstimateError: the step that finishes a campaign logs
// its estimate at start against its real drain (2 recipients at 1/s plus a
// 1 s recount: 3 s estimated; done after 4 s: 1 s late, +33 %), naming no
// recipient.
func TestFinishLogsTheEstimateError(t *testing.T) {
	st, q, v := newFakeStore(), &fakeQueue{}, &fakeVisibility{}
	c := runningCampaign(st)
	c.Pace = domain.CampaignPace{RecipientsPerSecond: 1, Tail: time.Second}
	for _, u := range []string{"u1", "u2"} {
		st.profiles[u] = true
	}
	st.addChunk(c, domain.InlineChunk, "u1", "u2")
	st.finishAt = t0.Add(4 * time.Second)
	var buf bytes.Buffer
	h := New(Deps{Store: st, Queue: q, Visibility: v, Catalog: catalog.MustLoad(), Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewJSONHandler(&buf, nil)), ReconcileDelay: time.Second})
	handle(t, h, domain.CampaignMessage{Kind: domain.CampaignPlan, CampaignID: c.ID})
	handle(t, h, q.take()...)
	deliver(st, c, "u1", domain.StatusSent)
	deliver(st, c, "u2", domain.StatusSent)
	drain(t, h, q, 5)
	if st.campaigns[c.ID].Status != domain.CampaignDone {
		t.Fatalf("campaign %s, want done", st.campaigns[c.ID].Status)
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(l, `"msg":"campaign finished"`) {
			if line != nil {
				t.Fatal("finished logged twice")
			}
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(l, "u1") || strings.Contains(l, "u2") {
				t.Errorf("the line names a recipient: %s", l)
			}
		}
	}
	want := map[string]float64{"recipients": 2, "sent": 2, "recipientsPerSecond": 1, "estimatedSeconds": 3, "drainSeconds": 4, "estimateErrorSeconds": 1}
	for k, w := range want {
		if got, _ := line[k].(float64); got != w {
			t.Errorf("%s = %v, want %v (line %v)", k, line[k], w, line)
		}
	}
	if r, _ := line["estimateErrorRatio"].(float64); r < 0.333 || r > 0.334 {
		t.Errorf("estimateErrorRatio %v, want 1/3", line["estimateErrorRatio"])
	}
}

// TestDefaultReconcileDelayIsThePaceTail: the API's estimate assumes the
// campaign function's default reconcile delay when none is set.
func TestDefaultReconcileDelayIsThePaceTail(t *testing.T) {
	s, err := policy.PaceSettingsFromEnv(func(string) string { return "" })
	if err != nil || s.ReconcileDelay != DefaultReconcileDelay {
		t.Fatalf("pace tail %s, %v; want DefaultReconcileDelay %s", s.ReconcileDelay, err, DefaultReconcileDelay)
	}
}
