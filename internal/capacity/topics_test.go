package capacity

import (
	"testing"
)

// TestTopicSends: the 1 M- and 10 M-subscriber topic sends (issue 39) at
// the template's fan-out pace: units a second, the shards' partitions,
// drain time and the cost per million recipients.
func TestTopicSends(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	res, err := defaultRun(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key                                    string
		tableWrites, writes, reads, partitions float64
		itemsPerShard, scanSeconds, drainHours float64
		fanOutHours                            float64
	}{
		// 2,000 recipients/s; a 10 M send's 10,000 pending lots recounted
		// every 30 s are the difference.
		{"1000000", 14608, 22510, 13256.52, 15, 62500, 6.3, 1.46, 0.14},
		{"10000000", 26008, 33910, 15056.52, 27, 625000, 62.5, 9.43, 1.39},
	} {
		ts, ok := res.Topics[tc.key]
		if !ok {
			t.Fatalf("no topic send of %s subscribers", tc.key)
		}
		if ts.TableWriteUnitsPerSecond != tc.tableWrites || ts.WriteUnitsPerSecond != tc.writes || ts.ReadUnitsPerSecond != tc.reads || ts.TablePartitions != tc.partitions ||
			ts.Shards != 16 || ts.ItemsPerShard != tc.itemsPerShard || ts.ScanSeconds != tc.scanSeconds || ts.DrainHours != tc.drainHours || ts.FanOutHours != tc.fanOutHours {
			t.Errorf("%s subscribers: %+v, want %+v", tc.key, ts, tc)
		}
		// A page of 1,000 subscriber items (220 B) is 27 read units
		// eventually consistent; each recipient's mute read 1 unit.
		if ts.PageReadUnits != 27 || ts.ShardReadUnitsPerSecond != 3.38 || ts.ShardReadUnitsPerSecondMax != 270 || ts.TopicReadUnitsPerSecond != 2054 || ts.PerMillionRecipientsUSD != 6.65 {
			t.Errorf("%s subscribers: reads %+v", tc.key, ts)
		}
	}
	for name, want := range map[string][2]float64{
		CheckTopicShardReads:  {270, 3000},
		CheckTopicDrain:       {9.43, 12},
		CheckTopicTableWrites: {26008, 32000},
	} {
		if c := namedCheck(t, res, name); !c.OK || c.Value != want[0] || c.Limit != want[1] {
			t.Errorf("%s: %+v, want %v of %v", name, c, want[0], want[1])
		}
	}
	// The checks fail where they should: the old 6 h StuckAfter(low) and a
	// warm 25,000 are passed by the 10 M send.
	l := res.Limits
	l.StuckAfterLowSeconds = 6 * 3600
	l.WarmWrite = map[string]float64{"table": 25000}
	r := Result{Topics: res.Topics}
	r.checkTopics(l)
	for _, name := range []string{CheckTopicDrain, CheckTopicTableWrites} {
		if c := namedCheck(t, r, name); c.OK {
			t.Errorf("%s passes with %v h and a warm %v: %+v", name, l.StuckAfterLowSeconds/3600, l.WarmWrite["table"], c)
		}
	}
}
