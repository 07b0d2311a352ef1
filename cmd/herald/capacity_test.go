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
	if err := runCapacity([]string{"--json"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var res struct {
		MaxW   *float64           `json:"maxPartitionWriteUnitsPerSecond"`
		MaxR   *float64           `json:"maxPartitionReadUnitsPerSecond"`
		Limits []string           `json:"limitsExceeded"`
		Cost   map[string]float64 `json:"costPerMillionUSD"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.MaxW == nil || res.MaxR == nil || res.Limits == nil || len(res.Limits) != 0 {
		t.Errorf("result %s", out.String())
	}
	for _, k := range []string{"email", "email-batch", "sms", "push", "push-batch"} {
		if res.Cost[k] <= 0 {
			t.Errorf("costPerMillionUSD[%s] = %v", k, res.Cost[k])
		}
	}
	// Twice the peak, all deferred to one instant, passes a limit: non-zero exit.
	if err := runCapacity([]string{"--json", "--peak", "40000", "--deferred", "1", "--average", "0"}, io.Discard, io.Discard); !errors.Is(err, errLimitsExceeded) {
		t.Errorf("at 40,000 deferrals/s: %v, want limits exceeded", err)
	}
}
