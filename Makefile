# Herald — build, test and run locally.
#   make dev        the whole system on this machine (emulators + functions)
#   make test       unit, template and end-to-end tests (-race), then aws-check's checks
#   make aws-check  cfn-lint, AWS's control-plane rules (scripts/controlplane), IAM conformance of the e2e suite's AWS calls
# sam build calls the build-<LogicalId> targets (BuildMethod: makefile).

SHELL := /bin/bash
GO ?= go
FUNCTIONS := api relay email sms push scheduler feedback campaign live liveauthorizer livepost
# The functions' logical ids in template.yaml: sam build runs build-<LogicalId>.
FUNCTION_IDS := ApiFunction RelayFunction RelayHighFunction EmailFunction SmsFunction PushFunction SchedulerFunction FeedbackFunction CampaignFunction LiveFunction LiveAuthorizerFunction LivePostFunction
LAMBDA_FLAGS := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_BUILD := $(LAMBDA_FLAGS) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w -buildid='
INFRA := infra/local
TEST_TIMEOUT ?= 15m
# Python tools (scripts/iam/python-deps.sh): a virtualenv under .cache when
# the machine's python3 lacks the pinned versions.
VENV := .cache/python
CFN_LINT = $(if $(wildcard $(VENV)/bin/cfn-lint),$(VENV)/bin/cfn-lint,cfn-lint)
# A python3 reached through a version manager's shim (pyenv) costs ~0.5 CPU s
# per start in bash, and the tests start Python often (the SAM transform,
# cfn-lint): test and aws-check put the interpreter's own directory first.
ifneq ($(filter test aws-check,$(MAKECMDGOALS)),)
PYTHON_DIR := $(shell python3 -c 'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null)
ifneq ($(PYTHON_DIR),)
ifneq ($(shell command -v python3),$(PYTHON_DIR)/python3)
export PATH := $(PYTHON_DIR):$(PATH)
endif
endif
endif
# Packages holding only benchmarks (make bench runs them): make test vets them,
# so they compile, but links no test binary that would run nothing
# (internal/devstack/makefile_test.go keeps them free of tests).
BENCH_ONLY := internal/e2e/campaignbench internal/e2e/isolation internal/e2e/inbox/bench
# Packages whose tests drain a campaign on real time for minutes (make
# test-eta, make test-topics): left out of make test's time budget.
SLOW_E2E := internal/e2e/campaigneta internal/e2e/topics
# Test binaries make test runs at once: one more than the cores, as the
# end-to-end packages wait on their emulators and polls part of the time
# (on 2 cores 8 m 01 s against 8 m 38-8 m 57 s with Go's default of one a
# core, for the same CPU: docs/benchmarks.md, "Test time").
TEST_P ?= $(shell echo $$(( $$(nproc) + 1 )))
# The longest packages of make test, longest first: go test starts packages
# in the order it is given them (TEST_P at a time), and a long one
# started last would run alone at the end while the other core idles.
LONG_FIRST := internal/devstack internal/capacity internal/e2e/deadlines internal/e2e/browser internal/e2e/ops cmd/herald internal/e2e/attack internal/e2e/faults internal/e2e/lifecycle internal/e2e/cost
TEST_PKGS = $(addprefix github.com/heraldhq/herald/,$(LONG_FIRST)) $(shell $(GO) list ./... | grep -vx $(addprefix -e github.com/heraldhq/herald/,$(BENCH_ONLY) $(SLOW_E2E) $(LONG_FIRST)))
# Where e2e packages record the AWS calls each function made (stacktest).
IAM_SEEN := $(CURDIR)/.cache/iam/seen
# The e2e packages aws-check runs and records from, to stay under 5 minutes.
# Left out: iamcheck (expects denials; make test runs it), lifecycle (starts
# its own stacks and records nothing), the benchmark-only packages (no test
# to record, only binaries to link), and campaignscale, release, inbox,
# faults and browser (slow, and each call they make a kept package makes
# too; deadlines is kept: the conformance check found calls on mobile
# endpoints that only it makes). make test
# records every package and fails, naming the call, when a left-out package
# is the only one making a call (docs/decisions.md).
IAM_E2E_SKIP := iamcheck lifecycle cost campaignscale release inbox faults browser $(BENCH_ONLY:internal/e2e/%=%) $(SLOW_E2E:internal/e2e/%=%)
IAM_E2E = $(shell $(GO) list ./internal/e2e/... | sed 's|^github.com/heraldhq/herald/||' | grep -vx $(addprefix -e internal/e2e/,$(IAM_E2E_SKIP)))

# The control-plane rules run for two accounts: a new one, whose Lambda
# quota (10) leaves nothing to reserve, with the template's defaults; and the
# production profile of docs/deploy.md (its parameters beyond the trial's, on
# the quota it asks for; a test holds the document to these two lines).
NEW_ACCOUNT_CONCURRENCY := 10
PRODUCTION_CONCURRENCY := 1000
PRODUCTION_PARAMS := EmailSendRate=500 SmsSendRate=500 PushSendRate=500 ChannelReservedConcurrency=35 RelayHighReservedConcurrency=32

.PHONY: all build deps deps-browser python-deps dev test test-eta test-topics test-unit aws-check bench-latency aws-lint iam-conformance bench lint deploy clean herald screenshots $(addprefix build-,$(FUNCTION_IDS))

all: build

## deps: install the local emulators (npm ci + DynamoDB Local), Go modules and the pinned Python tools
deps: $(INFRA)/node_modules/.package-lock.json $(INFRA)/.cache/dynamodb/DynamoDBLocal.jar python-deps
	$(GO) mod download

## python-deps: aws-sam-translator 1.110.0 and cfn-lint 1.51 (as found, else a virtualenv in .cache/python)
python-deps:
	./scripts/iam/python-deps.sh

## deps-browser: Debian's chromium for the browser tests (internal/e2e/browser), when missing
deps-browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [ -n "$$HERALD_CHROMIUM" ] || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium; }
	@{ command -v chromium || command -v chromium-browser || echo "$$HERALD_CHROMIUM"; } | head -n 1

$(INFRA)/node_modules/.package-lock.json: $(INFRA)/package.json $(INFRA)/package-lock.json
	cd $(INFRA) && npm ci --no-audit --no-fund --loglevel=error

$(INFRA)/.cache/dynamodb/DynamoDBLocal.jar: $(INFRA)/package.json
	$(INFRA)/fetch-dynamodb.sh

## build: every function as bootstrap for provided.al2023 / arm64 under build/<name>/
build: $(addprefix build/,$(addsuffix /bootstrap,$(FUNCTIONS)))

build/%/bootstrap: FORCE
	$(LAMBDA_BUILD) -o $@ ./functions/$*

FORCE:

# sam build: one target per function logical id; SAM sets ARTIFACTS_DIR.
build-ApiFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/api
build-RelayFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/relay
# The high-priority relay runs the same code with its own stream mapping.
build-RelayHighFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/relay
build-EmailFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/email
build-SmsFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/sms
build-PushFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/push
build-SchedulerFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/scheduler
build-FeedbackFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/feedback
build-CampaignFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/campaign
build-LiveFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/live
build-LiveAuthorizerFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/liveauthorizer
build-LivePostFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/livepost

## herald: the CLI for this machine
herald:
	$(GO) build -o bin/herald ./cmd/herald

## dev: run everything locally until Ctrl-C (HERALD_API_PORT, default 3000)
dev: deps herald
	./bin/herald dev

## test: all tests with the race detector; integration tests start their own emulators and
## record their functions' AWS calls, which the IAM conformance then checks; then aws-lint's
## control-plane (a new account's quota, the production profile) and update checks (its cfn-lint of template.yaml ran in go test: TestCfnLint)
# vet runs with -race so that it type-checks against the same compiled packages the
# -race tests use (one compile of the module, not two), and it runs every analyzer on every
# package and its tests, so go test's own subset of vet is off (-vet=off). The two
# commands after the tests are built with -race for the same reason: they link, not compile.
# scripts/testdynamodb runs the tests with one DynamoDB Local for all packages, each
# stack in a database of its own, instead of a JVM started per package.
test: deps
	$(GO) vet -race ./...
	HERALD_IAM_SEEN=$(IAM_SEEN) $(GO) run -race ./scripts/testdynamodb $(GO) test -p $(TEST_P) -race -vet=off -timeout $(TEST_TIMEOUT) $(TEST_PKGS)
	$(GO) run -race ./scripts/controlplane -account-concurrency $(NEW_ACCOUNT_CONCURRENCY)
	$(GO) run -race ./scripts/controlplane -account-concurrency $(PRODUCTION_CONCURRENCY) -parameter-overrides '$(PRODUCTION_PARAMS)'
	$(MAKE) --no-print-directory iam-conformance RUN_FLAGS=-race

## aws-check: cfn-lint, then the e2e packages of IAM_E2E (recording each function's AWS calls) and
## the IAM conformance of those calls to the roles the SAM transform makes of template.yaml
## (internal/e2e/iamcheck, which shows a weakened template failing, records nothing: make test runs it)
aws-check: python-deps aws-lint
	rm -rf $(IAM_SEEN)
	HERALD_IAM_SEEN=$(IAM_SEEN) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(addprefix ./,$(IAM_E2E))
	$(MAKE) --no-print-directory iam-conformance

aws-lint:
	$(CFN_LINT) template.yaml
	$(GO) run ./scripts/controlplane -account-concurrency $(NEW_ACCOUNT_CONCURRENCY)
	$(GO) run ./scripts/controlplane -account-concurrency $(PRODUCTION_CONCURRENCY) -parameter-overrides '$(PRODUCTION_PARAMS)'

# -cover: with make test's records of every package, no call may be made
# only by a package aws-check leaves out.
iam-conformance:
	$(GO) run $(RUN_FLAGS) ./scripts/iam/conformance -seen $(IAM_SEEN) -cover "$(IAM_E2E)" $(if $(V),-v)

## screenshots: re-take docs/img/dev-console.png and docs/img/demo-inbox.png in Chromium
screenshots: deps deps-browser
	HERALD_UPDATE_SCREENSHOTS=1 $(GO) test -count=1 -run TestConsoleInboxAndPushInChromium ./internal/e2e/browser/

## test-eta: a 2,000-user campaign's finish estimate against its real drain (issue 42; ~4 minutes, a 200 s drain at 10/s; HERALD_CAMPAIGNETA_USERS, HERALD_CAMPAIGNETA_EMAIL_RATE scale it)
test-eta: deps
	$(GO) test -count=1 -timeout 15m -v ./internal/e2e/campaigneta

## test-topics: a 2,000-subscriber topic send, muted and excluded users, a replay and a cancel mid-fan-out (issue 39; minutes)
test-topics: deps
	HERALD_TOPICS_SUBSCRIBERS=2000 $(GO) test -count=1 -timeout 15m -v ./internal/e2e/topics

## test-unit: only tests that need no emulators
test-unit:
	$(GO) test -race -short ./...

## bench: handler benchmarks, binary sizes, cold start, requests per notification
bench: deps build
	./scripts/bench.sh

# The stack paced as a deploy paces it, from local figures: CampaignFanOutRate
# is the table's write budget (2,000/s on AWS, over the template's 10 × 4
# lots); 200 lets the campaign's one lot create 5 notifications/s, what one
# DynamoDB Local sharing 2 cores with every function carries beside the
# steady traffic. EmailSendRate is required on AWS: 20 holds the steady
# 8/s and leaves low priority its BulkQuotaShare (60 %). docs/decisions.md,
# "The latency objective's local stack is paced".
## bench-latency: accepted → sent p50/p99 per priority at a steady rate, idle and with a 1,000-user low campaign draining, and the high ratio loaded ÷ idle (issue 42; some 5 minutes; HERALD_LOW_POLLERS sets the local low pollers per queue, HERALD_CAMPAIGN_FANOUT_RATE and HERALD_EMAIL_SEND_RATE the budgets, 0 unpaced)
bench-latency: deps
	HERALD_LOW_POLLERS=$${HERALD_LOW_POLLERS:-1} HERALD_CAMPAIGN_FANOUT_RATE=$${HERALD_CAMPAIGN_FANOUT_RATE:-200} HERALD_EMAIL_SEND_RATE=$${HERALD_EMAIL_SEND_RATE:-20} $(GO) test -count=1 -run '^$$' -bench BenchmarkLatencyObjective -benchtime 1x -timeout 15m ./internal/e2e/isolation

## lint: no tracked binaries or large files, gofmt, go vet, staticcheck
lint:
	./scripts/check-tracked.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

## deploy: build with SAM and deploy with the default profile in samconfig.toml
deploy:
	sam build && sam deploy

clean:
	rm -rf build bin .aws-sam
