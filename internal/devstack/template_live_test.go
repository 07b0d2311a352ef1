package devstack

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/heraldhq/herald/internal/live"
)

// sqsMaxDelaySeconds is SendMessage's DelaySeconds bound (SQS API
// Reference: 0 to 900).
const sqsMaxDelaySeconds = 900

// TestLiveBroadcastRateMinimumFitsSQSDelay: a broadcast shard's continuation
// waits BroadcastPage × OnlineShards / LiveBroadcastRate seconds as an SQS
// message delay, which SQS caps at 900 s; the parameter's MinValue keeps
// every accepted rate within it, so the queue adapter's clamp never makes the
// pace faster than the parameter says.
func TestLiveBroadcastRateMinimumFitsSQSDelay(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^  LiveBroadcastRate:\n(?:    .*\n)*?    MinValue: (\d+)\n`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("template.yaml: LiveBroadcastRate has no MinValue")
	}
	minRate, _ := strconv.Atoi(string(m[1]))
	if minRate < 1 {
		t.Fatalf("LiveBroadcastRate MinValue %d: want at least 1", minRate)
	}
	if wait := live.BroadcastPage * live.OnlineShards / minRate; wait > sqsMaxDelaySeconds {
		t.Errorf("at LiveBroadcastRate %d a continuation waits %d s, over SQS's %d s delay limit: raise MinValue", minRate, wait, sqsMaxDelaySeconds)
	}
}
