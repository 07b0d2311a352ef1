package api

import (
	"context"
	"log/slog"
	"net/http"
)

// responder answers a route's failures the same way for every handler: the
// details go to its log, the caller gets a problem without them. Every
// feature handler embeds it, so h.log and h.internalError are its own.
type responder struct {
	log *slog.Logger
}

// internalError logs err with its context and answers a problem that carries
// no detail (details stay in the logs). A call cut short by the invocation's
// deadline answers a retryable 503 instead: the work may or may not have been
// done, and a retry with the same idempotency key settles which.
func (r responder) internalError(ctx context.Context, what string, err error) response {
	if statusFor(err) == http.StatusServiceUnavailable {
		r.log.WarnContext(ctx, what, "error", err, "outcome", "timeout")
		return problemResponse(timeoutProblem())
	}
	r.log.ErrorContext(ctx, what, "error", err)
	return problemResponse(&Problem{Status: http.StatusInternalServerError, Code: "internal", Title: "Internal error"})
}

// storeError answers a failed store call: domain errors through statusFor —
// not found as the route's own problem, a lost conditional write as a
// retryable 409 — and anything else as an internal error.
func (r responder) storeError(ctx context.Context, what string, err error, notFound func() *Problem) response {
	switch statusFor(err) {
	case http.StatusNotFound:
		if notFound != nil {
			return problemResponse(notFound())
		}
	case http.StatusConflict:
		r.log.WarnContext(ctx, what, "error", err, "outcome", "conflict")
		return problemResponse(&Problem{Status: http.StatusConflict, Code: "conflict",
			Detail: "a concurrent change to the same resource won; retry the request"})
	}
	return r.internalError(ctx, what, err)
}
