package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// topicAccepted is the 202 body of a topic send: the fan-out is a campaign
// (GET /v1/campaigns/{id} counts it, DELETE cancels it).
type topicAccepted struct {
	ID         string `json:"id"`
	Topic      string `json:"topic"`
	Recipients string `json:"recipients"`
}

func invalidTopic(pointer string) *Problem {
	return fieldProblem(http.StatusBadRequest, "invalid_topic", pointer, "a topic is 1-128 characters of letters, digits and ._:|-")
}

// sendTopic accepts a notification to every subscriber of a topic: a
// campaign whose audience is the topic's shards, started at once, recorded
// under the caller. With an Idempotency-Key the campaign's id derives from
// (caller, key), so a replay finds it and starts nothing more.
func (h *NotificationsHandler) sendTopic(ctx context.Context, caller, key string, hasKey bool, nr *notificationRequest) response {
	r := nr.Recipient
	switch {
	case !domain.ValidTopic(r.Topic):
		return problemResponse(invalidTopic("/recipient/topic"))
	case r.UserID != "" || r.Email != "" || r.Phone != "" || r.Locale != "":
		return problemResponse(fieldProblem(http.StatusBadRequest, "invalid_recipient", "/recipient",
			"a recipient is a userId or a topic, not both: a topic's subscribers get their own contacts and locale"))
	case nr.ResourceID != "" || nr.BatchKey != "":
		return problemResponse(fieldProblem(http.StatusBadRequest, "not_for_topic", "/resourceId",
			"resourceId and batchKey are per user: a topic send takes an Idempotency-Key"))
	case len(nr.Exclude) > domain.MaxTopicExclude:
		return problemResponse(fieldProblem(http.StatusUnprocessableEntity, "exclude_too_large", "/exclude",
			"a topic send excludes at most "+strconv.Itoa(domain.MaxTopicExclude)+" users"))
	}
	var exclude []string
	for i, id := range nr.Exclude {
		if p := validateUserID(id, "/exclude/"+strconv.Itoa(i)); p != nil {
			return problemResponse(p)
		}
		if !slices.Contains(exclude, id) {
			exclude = append(exclude, id)
		}
	}
	now := h.now()
	typ, p := lookupType(h.catalog, nr.Type)
	if p != nil {
		return problemResponse(p)
	}
	n := &domain.Notification{Type: nr.Type}
	data, p := validateContent(nr, typ, n, now)
	if p != nil {
		return problemResponse(p)
	}
	if err := domain.CampaignPriority(n.Priority); err != nil {
		return problemResponse(fieldProblem(http.StatusUnprocessableEntity, "topic_priority_high", "/priority",
			"a topic send is bulk: it cannot take high priority (the one-time codes' queues and send-quota reserve); use normal or low"))
	}
	c := &domain.Campaign{Caller: caller, Type: nr.Type, Data: data, Priority: n.Priority, Channels: n.Channels, SendAt: n.SendAt,
		Topic: r.Topic, Exclude: exclude, Status: domain.CampaignDraft, CreatedAt: now}
	if nr.ExpiresAt != "" {
		c.ExpiresAt = n.ExpiresAt
	}
	cr := &campaignRequest{Type: nr.Type}
	c.RequestHash = campaignRequestHash(cr, c, nil)
	if hasKey {
		c.DedupeKey = "t\x00" + key
		c.ID = campaignIDFor(caller, c.DedupeKey)
	} else {
		c.ID = newCampaignID()
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < deadlineReserve {
		return problemResponse(timeoutProblem())
	}
	stored, err := h.campaigns.CreateCampaign(ctx, c, nil, "")
	replayed := false
	switch {
	case errors.Is(err, domain.ErrConflict) && stored != nil && hasKey && stored.Caller == c.Caller && stored.DedupeKey == c.DedupeKey:
		if stored.RequestHash != c.RequestHash {
			return problemResponse(reusedProblem(true, ""))
		}
		c, replayed = stored, true
	case err != nil:
		return h.internalError(ctx, "create topic send", err)
	}
	if c.Status == domain.CampaignDraft { // new, or a replay of one whose start failed
		if _, resp, ok := startFanOut(ctx, h.responder, h.campaigns, h.campaignQueue, c.ID, caller); !ok {
			return resp
		}
	}
	h.log.InfoContext(ctx, "topic send accepted", "campaignId", c.ID, "type", c.Type, "priority", c.Priority,
		"excluded", len(c.Exclude), "replayed", replayed, "outcome", "accepted")
	resp := response{status: http.StatusAccepted, body: &topicAccepted{ID: c.ID, Topic: c.Topic, Recipients: "pending"},
		headers: map[string]string{"Location": "/v1/campaigns/" + c.ID}}
	if replayed {
		resp.headers[replayedHeader] = "true"
	}
	return resp
}
