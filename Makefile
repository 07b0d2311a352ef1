# Herald — build, test and run locally.
#   make dev     the whole system on this machine (emulators + functions)
#   make test    unit, template and end-to-end tests (-race)
# sam build calls the build-<LogicalId> targets (BuildMethod: makefile).

SHELL := /bin/bash
GO ?= go
FUNCTIONS := api relay email sms push scheduler feedback
# The functions' logical ids in template.yaml: sam build runs build-<LogicalId>.
FUNCTION_IDS := ApiFunction RelayFunction EmailFunction SmsFunction PushFunction SchedulerFunction FeedbackFunction
LAMBDA_FLAGS := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_BUILD := $(LAMBDA_FLAGS) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w -buildid='
INFRA := infra/local
TEST_TIMEOUT ?= 15m

.PHONY: all build deps deps-browser dev test test-unit bench lint deploy clean herald screenshots $(addprefix build-,$(FUNCTION_IDS))

all: build

## deps: install the local emulators (npm ci + DynamoDB Local) and Go modules
deps: $(INFRA)/node_modules/.package-lock.json $(INFRA)/.cache/dynamodb/DynamoDBLocal.jar
	$(GO) mod download

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

## herald: the CLI for this machine
herald:
	$(GO) build -o bin/herald ./cmd/herald

## dev: run everything locally until Ctrl-C (HERALD_API_PORT, default 3000)
dev: deps herald
	./bin/herald dev

## test: all tests with the race detector; integration tests start their own emulators
test: deps
	$(GO) vet ./...
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

## screenshots: re-take docs/img/dev-console.png and docs/img/demo-inbox.png in Chromium
screenshots: deps deps-browser
	HERALD_UPDATE_SCREENSHOTS=1 $(GO) test -count=1 -run TestConsoleInboxAndPushInChromium ./internal/e2e/browser/

## test-unit: only tests that need no emulators
test-unit:
	$(GO) test -race -short ./...

## bench: handler benchmarks, binary sizes, cold start, requests per notification
bench: deps build
	./scripts/bench.sh

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
