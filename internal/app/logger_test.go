package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/heraldhq/herald/internal/metrics"
)

func TestNewLoggerLevel(t *testing.T) {
	tests := []struct {
		name              string
		logLevel, awsLvl  string
		wantDebug         bool
		wantInfo          bool
		wantWarnAboutConf bool
	}{
		{name: "unset: INFO", wantInfo: true},
		{name: "LOG_LEVEL=DEBUG", logLevel: "DEBUG", wantDebug: true, wantInfo: true},
		{name: "LOG_LEVEL=WARN", logLevel: "WARN"},
		{name: "LOG_LEVEL=error lower case", logLevel: "error"},
		{name: "LOG_LEVEL wins over AWS_LAMBDA_LOG_LEVEL", logLevel: "WARN", awsLvl: "DEBUG"},
		{name: "AWS_LAMBDA_LOG_LEVEL when LOG_LEVEL is empty", awsLvl: "DEBUG", wantDebug: true, wantInfo: true},
		{name: "unknown LOG_LEVEL: INFO and a warning", logLevel: "LOUD", wantInfo: true, wantWarnAboutConf: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			env := map[string]string{"LOG_LEVEL": tt.logLevel, "AWS_LAMBDA_LOG_LEVEL": tt.awsLvl}
			log := NewLogger(&buf, func(k string) string { return env[k] })
			ctx := context.Background()
			log.DebugContext(ctx, "debug line")
			log.InfoContext(ctx, "info line")
			log.WarnContext(ctx, "warn line")
			out := buf.String()
			if got := strings.Contains(out, "debug line"); got != tt.wantDebug {
				t.Errorf("debug logged %v, want %v:\n%s", got, tt.wantDebug, out)
			}
			if got := strings.Contains(out, "info line"); got != tt.wantInfo {
				t.Errorf("info logged %v, want %v:\n%s", got, tt.wantInfo, out)
			}
			if !strings.Contains(out, "warn line") && !strings.EqualFold(tt.logLevel, "error") {
				t.Errorf("warn not logged:\n%s", out)
			}
			if got := strings.Contains(out, "LOG_LEVEL not understood"); got != tt.wantWarnAboutConf {
				t.Errorf("configuration warning %v, want %v", got, tt.wantWarnAboutConf)
			}
		})
	}
}

// TestNewLoggerLambdaFormat: the JSON keys are Lambda's (the runbook's Logs
// Insights queries filter on them) and the request id of the invocation is
// on every line logged with its context.
func TestNewLoggerLambdaFormat(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, func(string) string { return "" }).With("function", "X")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	log.InfoContext(ctx, "delivery outcome", "outcome", "sent")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %v\n%s", err, buf.String())
	}
	for k, want := range map[string]any{"message": "delivery outcome", "level": "INFO", "requestId": "req-1", "function": "X", "outcome": "sent"} {
		if line[k] != want {
			t.Errorf("%s = %v, want %v (line %v)", k, line[k], want, line)
		}
	}
	if _, ok := line["timestamp"]; !ok {
		t.Errorf("no timestamp: %v", line)
	}
	if _, ok := line["msg"]; ok {
		t.Errorf("slog's msg key leaked: %v", line)
	}
}

// TestMetricsFlowAtWarn: the log level filters log lines only; EMF metric
// documents written to the same stdout are not subject to it.
func TestMetricsFlowAtWarn(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, func(k string) string { return map[string]string{"LOG_LEVEL": "WARN"}[k] })
	emf := metrics.NewEMF(&buf, "", time.Now)
	log.Info("filtered")
	emf.Add(context.Background(), metrics.Sent, metrics.Dims{Channel: "email"}, 1)
	emf.Flush(context.Background())
	if strings.Contains(buf.String(), "filtered") || !strings.Contains(buf.String(), `"Sent"`) {
		t.Errorf("at WARN: want the metric and no INFO line, got:\n%s", buf.String())
	}
}
