package capacity

import (
	"math"
	"testing"
)

// A campaign lot of 1,000 recipients deferred for a day (issue 36, defect
// 7): recounted every 30 s it read 1,010 units 2,880 times (2.91 M read
// units, $0.37 a day; 8.7 M with three channels); waiting for its due time
// it sends 96 queue messages and reads nothing ($0.0001).
func TestDeferredReconcileCost(t *testing.T) {
	r, err := DeferredReconcileCost(ListPrices, DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	want := DeferredReconcile{Recipients: 1000, DelaySeconds: 30, ReadUnitsPerRecount: 1010, PollingRecountsPerDay: 2880,
		PollingReadUnitsPerDay: 2_908_800, WaitingMessagesPerDay: 96, WaitingReadUnitsPerDay: 0}
	got := r
	got.PollingUSDPerDay, got.WaitingUSDPerDay = 0, 0
	if got != want {
		t.Errorf("deferred lot %+v, want %+v", got, want)
	}
	if math.Abs(r.PollingUSDPerDay-0.37) > 0.005 || r.WaitingUSDPerDay > 0.0002 {
		t.Errorf("$%.4f a day polling, $%.5f waiting; want 0.37 and at most 0.0002", r.PollingUSDPerDay, r.WaitingUSDPerDay)
	}
}
