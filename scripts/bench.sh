#!/usr/bin/env bash
# make bench: Go benchmarks of the handlers and hot paths, then the Lambda
# binaries' sizes. Compare ratios within one run: the machine is shared.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== Go benchmarks ($(go version | cut -d' ' -f3), $(nproc) cores, $(date -u +%FT%TZ))"
go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" -timeout "${BENCHTIMEOUT:-30m}" ./... 2>&1 | grep -E '^(Benchmark|ok|PASS|FAIL|goos|goarch|cpu|pkg)' | grep -v '^ok.*no test files' || true
echo
echo "== Campaign at scale (internal/e2e/campaignscale at 2,000 users; make test runs 600)"
HERALD_CAMPAIGNSCALE_USERS=2000 go test -count=1 -v -run TestCampaignUnderQuota -timeout 20m ./internal/e2e/campaignscale/ 2>&1 | grep -E 'campaign of|peak bulk|idle high:|^(ok|FAIL|---)' || true
echo
echo "== Due at once (internal/e2e/release at 1,000 deliveries; make test runs 320)"
HERALD_RELEASE_DUE=1000 go test -count=1 -v -run TestThousandDueAtOnceAreReleasedOnce -timeout 20m ./internal/e2e/release/ 2>&1 | grep -E 'due at once|released and sent|^(ok|FAIL|---)' || true
echo
echo "== Lambda binaries (linux/arm64, -tags lambda.norpc, stripped)"
printf '%-12s %10s\n' function bytes
for f in build/*/bootstrap; do
  printf '%-12s %10s\n' "$(basename "$(dirname "$f")")" "$(stat -c %s "$f")"
done
echo
echo "== Cold start (fake Lambda Runtime API on loopback; process start → first poll, → first response)"
go run ./scripts/coldstart -runs "${COLDSTART_RUNS:-5}"
echo
echo "== Capacity model (herald capacity; docs/capacity.md)"
go run ./cmd/herald capacity
