package capacity

import (
	"errors"
	"maps"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/controlplane"
)

// TestReservationAdvice: with reserved concurrency off by default, the
// model says what to set once the quota is raised, read from the template:
// each channel function its mappings' concurrency (20 + 8 + 7), the high
// relay the table's partitions at its warm throughput (32,000 writes / 1,000
// a partition); and the quota those need, which the control-plane rule
// accepts with exactly 100 left unreserved, and a new account's 10 refuses.
func TestReservationAdvice(t *testing.T) {
	l := repoLimits(t)
	if len(l.Reserved) != 0 {
		t.Errorf("the template reserves %v by default, want nothing (a new account's quota is 10)", l.Reserved)
	}
	peak := []Peak{{LambdaConcurrency: map[string]float64{"ApiFunction": 20, "EmailFunction": 30, "RelayFunction": 8}}}
	a, err := adviseReservations(DefaultProfile(), l, peak)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"ChannelReservedConcurrency": 20 + 8 + 7, "RelayHighReservedConcurrency": 32}
	if !maps.Equal(a.Parameters, want) || len(a.Functions) != 4 {
		t.Errorf("advice %+v, want %v for the three channel functions and the high relay", a, want)
	}
	if a.Reserved != 3*35+32 || a.UnreservedPeak != 28 || a.AccountConcurrencyNeeded != 237 {
		t.Errorf("reserved %v, unreserved peak %v (api 20 + relay 8), quota needed %v; want 137, 28, 237", a.Reserved, a.UnreservedPeak, a.AccountConcurrencyNeeded)
	}
	overrides := map[string]string{}
	for k, v := range a.Parameters {
		overrides[k] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	tm, err := devstack.LoadTemplate("../../template.yaml", overrides)
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.Check(tm.Resolved, controlplane.Options{AccountConcurrency: int(a.AccountConcurrencyNeeded)}); err != nil {
		t.Errorf("the advice on the quota it asks for: %v", err)
	}
	var cpErr *controlplane.Error
	if err := controlplane.Check(tm.Resolved, controlplane.Options{AccountConcurrency: controlplane.NewAccountConcurrency}); !errors.As(err, &cpErr) || !cpErr.Has(controlplane.RuleUnreservedConcurrency) {
		t.Errorf("the advice on a new account's quota: %v, want refused", err)
	}

	// Read from the limits, not fixed: more pollers, a warmer table.
	l.MappingConcurrency["EmailFunction"] = 50
	l.WarmWrite["table"] = 40000
	if a, err = adviseReservations(DefaultProfile(), l, nil); err != nil {
		t.Fatal(err)
	}
	if a.Parameters["ChannelReservedConcurrency"] != 50 || a.Parameters["RelayHighReservedConcurrency"] != 40 || a.AccountConcurrencyNeeded != 3*50+40+100 {
		t.Errorf("with 50 email pollers and 40,000 warm writes: %+v", a)
	}
	if line := a.Line(); line != "reserved concurrency: none by default (a new account's quota of 10 allows none); once the account's Lambda quota is at least 290 (190 reserved + 100 unreserved), set ChannelReservedConcurrency=50 RelayHighReservedConcurrency=40" {
		t.Errorf("line %q", line)
	}
}

// TestProductionProfileReservesTheAdvice: the production profile make
// aws-lint checks (and docs/deploy.md's production line, held to it by the
// template tests) sets each reservation to what the model advises, on a
// quota that holds them.
func TestProductionProfileReservesTheAdvice(t *testing.T) {
	raw, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` := (.*)$`).FindSubmatch(raw)
		if m == nil {
			t.Fatalf("Makefile has no %s", name)
		}
		return string(m[1])
	}
	params, err := controlplane.ParseParameterOverrides(mk("PRODUCTION_PARAMS"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := adviseReservations(DefaultProfile(), repoLimits(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, v := range a.Parameters {
		if params[p] != strconv.FormatFloat(v, 'f', -1, 64) {
			t.Errorf("PRODUCTION_PARAMS %s=%q, the model advises %v", p, params[p], v)
		}
	}
	if quota, err := strconv.Atoi(mk("PRODUCTION_CONCURRENCY")); err != nil || float64(quota) < a.AccountConcurrencyNeeded {
		t.Errorf("PRODUCTION_CONCURRENCY %s, the reservations need %v", mk("PRODUCTION_CONCURRENCY"), a.AccountConcurrencyNeeded)
	}
}
