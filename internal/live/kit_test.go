package live

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestKitPingsAtPingInterval holds <herald-inbox>'s LIVE_PING_SECONDS
// (web/herald-inbox.js) to PingInterval: the routes' lease, the capacity
// model's ping rate and API Gateway's idle timeout all assume it.
func TestKitPingsAtPingInterval(t *testing.T) {
	b, err := os.ReadFile("../../web/herald-inbox.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^export const LIVE_PING_SECONDS = (\d+);$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("web/herald-inbox.js: no `export const LIVE_PING_SECONDS = <seconds>;`")
	}
	s, _ := strconv.Atoi(string(m[1]))
	if got := time.Duration(s) * time.Second; got != PingInterval {
		t.Errorf("herald-inbox.js LIVE_PING_SECONDS = %s, want live.PingInterval (%s): update the kit's constant", got, PingInterval)
	}
	if !regexp.MustCompile(`setInterval\(\(\) => this\._ping\(\), LIVE_PING_SECONDS \* 1000\)`).Match(b) {
		t.Error("herald-inbox.js does not ping every LIVE_PING_SECONDS")
	}
}
