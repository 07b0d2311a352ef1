package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/inbox"
)

// TopicsHandler serves the topic subscriptions: a topic's subscribers and
// a user's topics with their mutes (service routes), and the user's own
// topics (/v1/me/topics, user token; the user is the token's subject). A
// topic's send is POST /v1/notifications (NotificationsHandler).
type TopicsHandler struct {
	responder
	topics TopicStore
}

// TopicsDeps are the topic routes' collaborators, all required.
type TopicsDeps struct {
	Topics TopicStore
	Log    *slog.Logger
}

// NewTopics wires the topic routes.
func NewTopics(d TopicsDeps) *TopicsHandler {
	return &TopicsHandler{responder: responder{log: d.Log}, topics: d.Topics}
}

// TopicStore is what the topic routes need from the table.
type TopicStore interface {
	// SubscribeToTopic subscribes users and reports how many were new (a
	// subscribed user keeps their subscription and mute).
	SubscribeToTopic(ctx context.Context, topic string, users []string) (added int, err error)
	UnsubscribeFromTopic(ctx context.Context, topic, userID string) error
	// TopicSubscribers pages one shard of a topic in user order.
	TopicSubscribers(ctx context.Context, topic string, shard int, after string, limit int) ([]domain.Subscription, string, error)
	// UserTopics pages a user's subscriptions in topic order.
	UserTopics(ctx context.Context, userID, after string, limit int) ([]domain.Subscription, string, error)
	// SetTopicMuted is domain.ErrNotFound when the user is not subscribed.
	SetTopicMuted(ctx context.Context, userID, topic string, muted bool) (*domain.Subscription, error)
}

type subscribersRequest struct {
	UserIDs []string `json:"userIds"`
}

type subscribedView struct {
	Topic      string `json:"topic"`
	Subscribed int    `json:"subscribed"`
	Added      int    `json:"added"`
}

type subscriberView struct {
	UserID       string `json:"userId"`
	Muted        bool   `json:"muted"`
	SubscribedAt string `json:"subscribedAt"`
}

type subscribersPage struct {
	Topic       string           `json:"topic"`
	Subscribers []subscriberView `json:"subscribers"`
	NextCursor  string           `json:"nextCursor,omitempty"`
}

type userTopicView struct {
	Topic        string `json:"topic"`
	Muted        bool   `json:"muted"`
	SubscribedAt string `json:"subscribedAt"`
}

type userTopicsPage struct {
	UserID     string          `json:"userId"`
	Topics     []userTopicView `json:"topics"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

type muteRequest struct {
	Muted *bool `json:"muted"`
}

// Cursor scopes of the topic lists (inbox.Cursor: opaque, checked; its
// position is "s<shard>#u<last user>" or "t#<last topic>").
const (
	scopeSubscribers = "topic-subscribers"
	scopeUserTopics  = "user-topics"
)

func pathTopic(req *request) (string, *Problem) {
	t := req.PathParameters["topic"]
	if !domain.ValidTopic(t) {
		p := invalidTopic("")
		p.Parameter = "topic"
		return "", p
	}
	return t, nil
}

func notSubscribed() *Problem {
	return &Problem{Status: http.StatusNotFound, Code: "not_subscribed", Parameter: "topic", Detail: "the user is not subscribed to this topic"}
}

func invalidCursor() *Problem {
	return &Problem{Status: http.StatusBadRequest, Code: "invalid_cursor", Detail: "cursor is not one this list returned"}
}

func pageLimit(req *request) (int, *Problem) {
	limit, err := inbox.ParseLimit(req.QueryStringParameters["limit"])
	if err != nil {
		return 0, &Problem{Status: http.StatusBadRequest, Code: "invalid_limit", Detail: "limit must be an integer from 1 to 100"}
	}
	return limit, nil
}

// subscribe subscribes up to 1,000 users; subscribing again stores once.
func (h *TopicsHandler) subscribe(ctx context.Context, req *request) response {
	topic, p := pathTopic(req)
	if p != nil {
		return problemResponse(p)
	}
	body, p := readBodyLimit(req, maxCampaignBodyBytes, "256 KiB")
	if p != nil {
		return problemResponse(p)
	}
	var sr subscribersRequest
	if p := decodeStrict(body, &sr); p != nil {
		return problemResponse(p)
	}
	ids, p := validateRecipientIDs(sr.UserIDs, "/userIds")
	if p != nil {
		return problemResponse(p)
	}
	added, err := h.topics.SubscribeToTopic(ctx, topic, ids)
	if err != nil {
		return h.internalError(ctx, "subscribe", err)
	}
	h.log.InfoContext(ctx, "topic subscribed", "users", len(ids), "added", added, "outcome", "subscribed")
	return response{status: http.StatusOK, body: &subscribedView{Topic: topic, Subscribed: len(ids), Added: added}}
}

func (h *TopicsHandler) unsubscribe(ctx context.Context, req *request) response {
	topic, p := pathTopic(req)
	if p != nil {
		return problemResponse(p)
	}
	userID, p := pathUserID(req)
	if p != nil {
		return problemResponse(p)
	}
	if err := h.topics.UnsubscribeFromTopic(ctx, topic, userID); err != nil {
		return h.internalError(ctx, "unsubscribe", err)
	}
	return response{status: http.StatusNoContent}
}

// listSubscribers pages through the topic's shards in turn; the cursor
// holds the shard and the last user read.
func (h *TopicsHandler) listSubscribers(ctx context.Context, req *request) response {
	topic, p := pathTopic(req)
	if p != nil {
		return problemResponse(p)
	}
	limit, p := pageLimit(req)
	if p != nil {
		return problemResponse(p)
	}
	shard, after := 0, ""
	if c, ok := req.QueryStringParameters["cursor"]; ok {
		cur, err := inbox.DecodeCursor(c, scopeSubscribers+"/"+topic)
		s, a, found := strings.Cut(cur.Position, "#")
		n, nerr := strconv.Atoi(strings.TrimPrefix(s, "s"))
		a, user := strings.CutPrefix(a, "u")
		if err != nil || !found || !user || nerr != nil || n < 0 || n >= domain.TopicShards {
			return problemResponse(invalidCursor())
		}
		shard, after = n, a
	}
	page := subscribersPage{Topic: topic, Subscribers: []subscriberView{}}
	for len(page.Subscribers) < limit {
		subs, next, err := h.topics.TopicSubscribers(ctx, topic, shard, after, limit-len(page.Subscribers))
		if err != nil {
			return h.internalError(ctx, "list subscribers", err)
		}
		for _, s := range subs {
			page.Subscribers = append(page.Subscribers, subscriberView{UserID: s.UserID, Muted: s.Muted, SubscribedAt: formatTime(s.SubscribedAt)})
		}
		if next != "" {
			after = next
			continue
		}
		if shard++; shard == domain.TopicShards {
			break
		}
		after = ""
	}
	if shard < domain.TopicShards {
		page.NextCursor = inbox.Cursor{Scope: scopeSubscribers + "/" + topic, Position: "s" + strconv.Itoa(shard) + "#u" + after}.Encode()
	}
	return response{status: http.StatusOK, body: page}
}

// userTopics answers userID's topics, a page.
func (h *TopicsHandler) userTopics(ctx context.Context, req *request, userID string) response {
	limit, p := pageLimit(req)
	if p != nil {
		return problemResponse(p)
	}
	after := ""
	if c, ok := req.QueryStringParameters["cursor"]; ok {
		cur, err := inbox.DecodeCursor(c, scopeUserTopics+"/"+userID)
		topic, ok := strings.CutPrefix(cur.Position, "t#")
		if err != nil || !ok || !domain.ValidTopic(topic) {
			return problemResponse(invalidCursor())
		}
		after = topic
	}
	subs, next, err := h.topics.UserTopics(ctx, userID, after, limit)
	if err != nil {
		return h.internalError(ctx, "list user topics", err)
	}
	page := userTopicsPage{UserID: userID, Topics: make([]userTopicView, 0, len(subs))}
	for _, s := range subs {
		page.Topics = append(page.Topics, userTopicView{Topic: s.Topic, Muted: s.Muted, SubscribedAt: formatTime(s.SubscribedAt)})
	}
	if next != "" {
		page.NextCursor = inbox.Cursor{Scope: scopeUserTopics + "/" + userID, Position: "t#" + next}.Encode()
	}
	return response{status: http.StatusOK, body: page, headers: map[string]string{"Cache-Control": "no-store"}}
}

// mute mutes or unmutes userID's subscription to the path's topic.
func (h *TopicsHandler) mute(ctx context.Context, req *request, userID string) response {
	topic, p := pathTopic(req)
	if p != nil {
		return problemResponse(p)
	}
	body, p := readBody(req)
	if p != nil {
		return problemResponse(p)
	}
	var mr muteRequest
	if p := decodeStrict(body, &mr); p != nil {
		return problemResponse(p)
	}
	if mr.Muted == nil {
		return problemResponse(fieldProblem(http.StatusBadRequest, "missing_field", "/muted", "muted (true or false) is required"))
	}
	sub, err := h.topics.SetTopicMuted(ctx, userID, topic, *mr.Muted)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return problemResponse(notSubscribed())
	case err != nil:
		return h.internalError(ctx, "mute topic", err)
	}
	h.log.InfoContext(ctx, "topic mute set", "muted", sub.Muted, "outcome", "updated")
	return response{status: http.StatusOK, body: &userTopicView{Topic: sub.Topic, Muted: sub.Muted, SubscribedAt: formatTime(sub.SubscribedAt)}}
}
