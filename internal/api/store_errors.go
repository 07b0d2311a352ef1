package api

import (
	"context"
	"net/http"
)

// storeError answers a failed store call: domain errors through statusFor —
// not found as the route's own problem, a lost conditional write as a
// retryable 409 — and anything else as an internal error.
func (h *Handler) storeError(ctx context.Context, what string, err error, notFound func() *Problem) response {
	switch statusFor(err) {
	case http.StatusNotFound:
		if notFound != nil {
			return problemResponse(notFound())
		}
	case http.StatusConflict:
		h.log.WarnContext(ctx, what, "error", err, "outcome", "conflict")
		return problemResponse(&Problem{Status: http.StatusConflict, Code: "conflict",
			Detail: "a concurrent change to the same resource won; retry the request"})
	}
	return h.internalError(ctx, what, err)
}
