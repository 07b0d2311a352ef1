package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Subscribed is the answer to Subscribe: the users in the call and how many
// of them were new (subscribing again stores once and keeps a mute).
type Subscribed struct {
	Topic      string `json:"topic"`
	Subscribed int    `json:"subscribed"`
	Added      int    `json:"added"`
}

// Subscriber is one user following a topic.
type Subscriber struct {
	UserID       string    `json:"userId"`
	Muted        bool      `json:"muted"`
	SubscribedAt time.Time `json:"subscribedAt"`
}

// SubscriberPage is one page of a topic's subscribers.
type SubscriberPage struct {
	Topic       string       `json:"topic"`
	Subscribers []Subscriber `json:"subscribers"`
	NextCursor  string       `json:"nextCursor"`
}

// UserTopic is one topic a user follows, with its mute.
type UserTopic struct {
	Topic        string    `json:"topic"`
	Muted        bool      `json:"muted"`
	SubscribedAt time.Time `json:"subscribedAt"`
}

// UserTopicPage is one page of a user's topics.
type UserTopicPage struct {
	UserID     string      `json:"userId"`
	Topics     []UserTopic `json:"topics"`
	NextCursor string      `json:"nextCursor"`
}

// TopicNotification is a notification to every subscriber of a topic: each
// gets a normal notification of Type (muted subscribers none, mandatory
// types excepted). Exclude leaves out users, such as the actor.
type TopicNotification struct {
	Type     string            `json:"type"`
	Topic    string            `json:"-"`
	Exclude  []string          `json:"exclude,omitempty"`
	Data     map[string]string `json:"data,omitempty"`
	Priority string            `json:"priority,omitempty"`
	Channels []string          `json:"channels,omitempty"`
	// IdempotencyKey makes the whole topic send safe to repeat; NotifyTopic
	// generates one when it is empty.
	IdempotencyKey string `json:"-"`
}

// TopicAccepted is Herald's answer to a topic send: the fan-out is the
// campaign ID (GetCampaign counts it, CancelCampaign stops it).
type TopicAccepted struct {
	ID         string `json:"id"`
	Topic      string `json:"topic"`
	Recipients string `json:"recipients"`
	// Replayed is true when this answers an earlier send with the same key.
	Replayed       bool   `json:"-"`
	IdempotencyKey string `json:"-"`
}

func topicPath(topic string) string { return "/v1/topics/" + url.PathEscape(topic) + "/subscribers" }

// Subscribe subscribes up to 1,000 users to topic.
func (c *Client) Subscribe(ctx context.Context, topic string, userIDs []string) (*Subscribed, error) {
	var out Subscribed
	if _, err := c.do(ctx, call{method: http.MethodPut, path: topicPath(topic), body: map[string][]string{"userIds": userIDs},
		ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Unsubscribe removes userID from topic's subscribers.
func (c *Client) Unsubscribe(ctx context.Context, topic, userID string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: topicPath(topic) + "/" + url.PathEscape(userID), ok: []int{http.StatusNoContent}})
	return err
}

// ListSubscribers reads one page of topic's subscribers.
func (c *Client) ListSubscribers(ctx context.Context, topic string, p Page) (*SubscriberPage, error) {
	var out SubscriberPage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: topicPath(topic), query: p.query(), ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListUserTopics reads one page of the topics userID follows.
func (c *Client) ListUserTopics(ctx context.Context, userID string, p Page) (*UserTopicPage, error) {
	var out UserTopicPage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/users/" + url.PathEscape(userID) + "/topics", query: p.query(),
		ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// MuteTopic mutes (or unmutes) topic for userID, who must follow it.
func (c *Client) MuteTopic(ctx context.Context, userID, topic string, muted bool) (*UserTopic, error) {
	var out UserTopic
	if _, err := c.do(ctx, call{method: http.MethodPut, path: "/v1/users/" + url.PathEscape(userID) + "/topics/" + url.PathEscape(topic),
		body: map[string]bool{"muted": muted}, ok: []int{http.StatusOK}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// NotifyTopic notifies every subscriber of n.Topic once.
func (c *Client) NotifyTopic(ctx context.Context, n TopicNotification) (*TopicAccepted, error) {
	if n.IdempotencyKey == "" {
		n.IdempotencyKey = c.newKey()
	}
	body := struct {
		TopicNotification
		Recipient map[string]string `json:"recipient"`
	}{n, map[string]string{"topic": n.Topic}}
	var a TopicAccepted
	replayed, err := c.notify(ctx, body, n.IdempotencyKey, &a)
	if err != nil {
		return nil, err
	}
	a.Replayed, a.IdempotencyKey = replayed, n.IdempotencyKey
	return &a, nil
}
