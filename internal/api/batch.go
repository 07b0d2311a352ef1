package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

const (
	maxBatchItems = 100
	// maxBatchBytes bounds a whole batch; each item keeps the 64 KiB limit of
	// a single request.
	maxBatchBytes = 1 << 20
	// batchParallelism bounds concurrent writes of one batch.
	batchParallelism = 8
)

type batchRequest struct {
	Notifications []json.RawMessage `json:"notifications"`
}

// batchItem is one notification of a batch with its own idempotency key.
type batchItem struct {
	IdempotencyKey string `json:"idempotencyKey"`
	notificationRequest
}

// batchResult is one item's outcome: the 202 fields, or the problem.
type batchResult struct {
	Index          int      `json:"index"`
	Status         int      `json:"status"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty"`
	ID             string   `json:"id,omitempty"`
	CreatedAt      string   `json:"createdAt,omitempty"`
	Location       string   `json:"location,omitempty"`
	Replayed       bool     `json:"replayed,omitempty"`
	Problem        *Problem `json:"problem,omitempty"`
}

type batchResponse struct {
	Results []batchResult `json:"results"`
}

// createNotificationBatch accepts up to 100 notifications, each validated and
// stored on its own (one conditional write each, with the same idempotency
// rules as a single request), and answers 207 with one result per item in
// request order. Only an unusable envelope fails the whole request.
func (h *NotificationsHandler) createNotificationBatch(ctx context.Context, req *request) response {
	body, p := readBodyLimit(req, maxBatchBytes, "1 MiB")
	if p != nil {
		return problemResponse(p)
	}
	var br batchRequest
	if p := decodeStrict(body, &br); p != nil {
		return problemResponse(p)
	}
	switch n := len(br.Notifications); {
	case n == 0:
		return problemResponse(fieldProblem(http.StatusBadRequest, "missing_field", "/notifications", "notifications must list 1 to 100 items"))
	case n > maxBatchItems:
		return problemResponse(fieldProblem(http.StatusBadRequest, "batch_too_large", "/notifications", "a batch holds at most 100 notifications"))
	}
	results := make([]batchResult, len(br.Notifications))
	keys := make(map[string]int, len(br.Notifications))
	var wg sync.WaitGroup
	sem := make(chan struct{}, batchParallelism)
	for i, raw := range br.Notifications {
		prefix := fmt.Sprintf("/notifications/%d", i)
		results[i].Index = i
		var it batchItem
		if p := h.decodeBatchItem(raw, prefix, &it); p != nil {
			results[i].setProblem(p)
			continue
		}
		results[i].IdempotencyKey = it.IdempotencyKey
		if first, dup := keys[it.IdempotencyKey]; dup {
			results[i].setProblem(fieldProblem(http.StatusUnprocessableEntity, "duplicate_idempotency_key", prefix+"/idempotencyKey",
				fmt.Sprintf("item %d of this batch uses the same idempotencyKey", first)))
			continue
		}
		keys[it.IdempotencyKey] = i
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i].set(h.accept(ctx, req.caller, it.IdempotencyKey, true, &it.notificationRequest, prefix))
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.Problem != nil {
			countRejected(ctx, h.metrics, response{body: r.Problem})
		}
	}
	h.log.InfoContext(ctx, "batch processed", "items", len(results), "outcome", "multi_status")
	return response{status: http.StatusMultiStatus, body: &batchResponse{Results: results}}
}

// decodeBatchItem decodes one item on its own, so a bad item fails alone and
// its problem points into the batch.
func (h *NotificationsHandler) decodeBatchItem(raw json.RawMessage, prefix string, it *batchItem) *Problem {
	if len(raw) > maxBodyBytes {
		return fieldProblem(http.StatusRequestEntityTooLarge, "body_too_large", prefix, "a batch item exceeds 64 KiB")
	}
	if len(raw) == 0 || raw[0] != '{' {
		return fieldProblem(http.StatusBadRequest, "invalid_type", prefix, "each item must be an object")
	}
	if p := decodeNotificationRequest(raw, &it.notificationRequest, &it.IdempotencyKey); p != nil {
		p.Pointer = prefix + p.Pointer
		return p
	}
	if it.IdempotencyKey == "" {
		return fieldProblem(http.StatusBadRequest, "missing_field", prefix+"/idempotencyKey", "each item needs its own idempotencyKey")
	}
	if p := validateIdempotencyKey(it.IdempotencyKey); p != nil {
		p.Header, p.Pointer = "", prefix+"/idempotencyKey"
		p.Detail = "idempotencyKey must be 1-255 printable ASCII characters"
		return p
	}
	return nil
}

func (r *batchResult) setProblem(p *Problem) {
	r.set(problemResponse(p))
}

func (r *batchResult) set(resp response) {
	r.Status = resp.status
	switch b := resp.body.(type) {
	case *Problem:
		r.Problem = b
	case *acceptedBody:
		r.ID, r.CreatedAt = b.ID, b.CreatedAt
		r.Location = resp.headers["Location"]
		r.Replayed = resp.headers[replayedHeader] == "true"
	}
}
