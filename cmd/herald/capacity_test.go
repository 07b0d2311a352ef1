package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

func TestCapacityJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model")
	}
	var out bytes.Buffer
	if err := runCapacity([]string{"--json", "--template", "../../template.yaml"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var res struct {
		MaxW   *float64 `json:"maxPartitionWriteUnitsPerSecond"`
		TableW *float64 `json:"tableWriteUnitsPerSecond"`
		TableR *float64 `json:"tableReadUnitsPerSecond"`
		Drain  *float64 `json:"campaignDrainHours"`
		Checks []struct {
			Name string
			OK   bool
		} `json:"checks"`
		Seconds []struct {
			TableW *float64 `json:"tableWriteUnitsPerSecond"`
			TableR *float64 `json:"tableReadUnitsPerSecond"`
		} `json:"seconds"`
		MaxR   *float64           `json:"maxPartitionReadUnitsPerSecond"`
		Limits []string           `json:"limitsExceeded"`
		Cost   map[string]float64 `json:"costPerMillionUSD"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.MaxW == nil || res.MaxR == nil || res.Limits == nil || len(res.Limits) != 0 || res.TableW == nil || res.TableR == nil || res.Drain == nil ||
		*res.TableW <= 0 || *res.TableW > 40000 || *res.Drain <= 0 || len(res.Checks) < 20 || len(res.Seconds) != 3 {
		t.Errorf("result %s", out.String())
	}
	for _, s := range res.Seconds {
		if s.TableW == nil || s.TableR == nil || *s.TableW <= 0 {
			t.Errorf("a scenario without table units: %s", out.String())
		}
	}
	for _, c := range res.Checks {
		if !c.OK {
			t.Errorf("check %s fails with the template's defaults", c.Name)
		}
	}
	for _, k := range []string{"email", "email-batch", "sms", "push", "push-batch"} {
		if res.Cost[k] <= 0 {
			t.Errorf("costPerMillionUSD[%s] = %v", k, res.Cost[k])
		}
	}
	// Twice the peak, all deferred to one instant, passes a limit: non-zero exit.
	// 1,000 notifications/s on POST /v1/notifications leave its 1,500/s
	// throttle less than twice the demand: non-zero exit.
	if err := runCapacity([]string{"--json", "--template", "../../template.yaml", "--average", "1000"}, io.Discard, io.Discard); !errors.Is(err, errLimitsExceeded) {
		t.Errorf("at 1,000 notifications/s: %v, want limits exceeded", err)
	}
}
