package app

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// NewLogger returns a function's logger: JSON lines as Lambda's structured
// logging writes them (timestamp, level, message, requestId of the
// invocation in ctx), at the level the stack's LogLevel parameter sets in
// LOG_LEVEL, else AWS_LAMBDA_LOG_LEVEL (Lambda's ApplicationLogLevel), else
// INFO.
//
// lambdacontext.NewLogger reads only AWS_LAMBDA_LOG_LEVEL, and setting
// ApplicationLogLevel would also make Lambda filter stdout by level, where
// the EMF metric lines (no level) must keep flowing; so the level is
// applied here, to log lines only. Metrics do not pass through this logger.
func NewLogger(w io.Writer, getenv func(string) string) *slog.Logger {
	level, ok := logLevel(getenv("LOG_LEVEL"))
	if !ok {
		level, _ = logLevel(getenv("AWS_LAMBDA_LOG_LEVEL"))
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: lambdacontext.ReplaceAttr})
	log := slog.New(requestIDHandler{h})
	if v := getenv("LOG_LEVEL"); v != "" && !ok {
		log.Warn("LOG_LEVEL not understood, logging at "+level.String(), "logLevel", v)
	}
	return log
}

// logLevel parses DEBUG, INFO, WARN or ERROR (any case); "" and anything
// else are INFO and not ok.
func logLevel(s string) (slog.Level, bool) {
	var l slog.Level
	if s == "" || l.UnmarshalText([]byte(s)) != nil {
		return slog.LevelInfo, false
	}
	return l, true
}

// requestIDHandler adds the invocation's request id, as lambdacontext's own
// handler does.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		r.AddAttrs(slog.String("requestId", lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
