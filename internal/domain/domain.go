// Package domain holds Herald's vocabulary and rules: channels, priorities, the
// per-channel delivery state machine and the queue message contract. It is pure:
// no AWS, no I/O, so every rule here is unit-tested without emulators.
package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Channel is an external delivery channel. The in-app inbox is not a channel:
// the notification record itself is the inbox item and is always written.
type Channel string

const (
	ChannelEmail Channel = "email"
	ChannelSMS   Channel = "sms"
	ChannelPush  Channel = "push"
)

// Channels lists every external channel in a stable order.
var Channels = []Channel{ChannelEmail, ChannelSMS, ChannelPush}

// ParseChannel validates a channel name.
func ParseChannel(s string) (Channel, error) {
	switch c := Channel(s); c {
	case ChannelEmail, ChannelSMS, ChannelPush:
		return c, nil
	}
	return "", fmt.Errorf("unknown channel %q", s)
}

// Priority selects the queue a delivery travels on; priorities are isolated by
// queues, never by sorting.
type Priority string

const (
	PriorityHigh   Priority = "high"
	PriorityNormal Priority = "normal"
	PriorityLow    Priority = "low"
)

// Priorities lists every priority, most urgent first.
var Priorities = []Priority{PriorityHigh, PriorityNormal, PriorityLow}

// ParsePriority validates a priority name.
func ParsePriority(s string) (Priority, error) {
	switch p := Priority(s); p {
	case PriorityHigh, PriorityNormal, PriorityLow:
		return p, nil
	}
	return "", fmt.Errorf("unknown priority %q", s)
}

// QueueName is the logical work queue for a channel and priority, e.g. "email-high".
// Deployments map it to a real queue URL.
func QueueName(c Channel, p Priority) string { return string(c) + "-" + string(p) }

// NotificationStatus is the lifecycle of the notification as a whole (the
// per-channel progress lives in deliveries).
type NotificationStatus string

const (
	NotificationAccepted  NotificationStatus = "accepted"
	NotificationCancelled NotificationStatus = "cancelled"
)

// Recipient identifies the user and optional contact overrides given at intake.
type Recipient struct {
	UserID string `json:"userId"`
	Email  string `json:"email,omitempty"`
	Phone  string `json:"phone,omitempty"`
	Locale string `json:"locale,omitempty"`
}

// Notification is what a caller asked for, as stored by intake. It is also the
// user's in-app inbox item.
type Notification struct {
	ID         string
	Caller     string
	Type       string
	Recipient  Recipient
	Data       map[string]any
	Priority   Priority
	Channels   []Channel // requested channels; empty means the type's defaults
	ResourceID string
	BatchKey   string
	SendAt     time.Time // zero: now
	ExpiresAt  time.Time // zero: never
	CreatedAt  time.Time
	Status     NotificationStatus
	// RequestHash is the canonical hash of the accepted request, compared on
	// idempotent replays.
	RequestHash string
	// DedupeKey is the caller-scoped idempotency or resource key this
	// notification was created under ("" when none).
	DedupeKey   string
	ReadAt      time.Time
	ArchivedAt  time.Time
	CancelledAt time.Time
	// CampaignID names the campaign that created the notification ("" for
	// one accepted alone); CampaignChunk the chunk (lot) that created it.
	CampaignID    string
	CampaignChunk string
	// Topic is the topic whose send created the notification ("" for
	// none); Muted that its recipient had muted the topic when the send
	// reached them: every channel is skipped (ReasonMuted) and it is not an
	// inbox item.
	Topic string
	Muted bool
	// LastDue is the latest any of its deliveries can be due when planned
	// on time (policy.LatestDue; zero: CreatedAt). The store keeps the
	// notification until then plus the retention; it is not stored itself.
	LastDue time.Time
}

// Latest is the latest of times (the zero time when none).
func Latest(times ...time.Time) time.Time {
	var last time.Time
	for _, t := range times {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// Expired reports whether the notification must no longer be delivered.
func (n *Notification) Expired(now time.Time) bool {
	return !n.ExpiresAt.IsZero() && !now.Before(n.ExpiresAt)
}

// WorkMessage is the body of every work-queue message: identifiers only. The
// worker loads content from the table at send time ("recheck before send");
// the recipient's id lets it read the notification and the profile in one
// request. Messages without it (queued before it was carried) still work.
type WorkMessage struct {
	NotificationID string  `json:"notificationId"`
	Channel        Channel `json:"channel"`
	UserID         string  `json:"userId,omitempty"`
	// CampaignID lets the worker read the campaign's status in the same
	// batch read (a cancelled campaign sends nothing more).
	CampaignID string `json:"campaignId,omitempty"`
}

// ErrMalformedWorkMessage: a work-queue body that is not a work message for
// the channel (undecodable, unknown fields, no id, another channel).
var ErrMalformedWorkMessage = errors.New("malformed work message")

// DecodeWorkMessage strictly decodes a work-queue body for channel c. On
// ErrMalformedWorkMessage it still returns what did decode (operators list
// parked messages by it).
func DecodeWorkMessage(body string, c Channel) (WorkMessage, error) {
	var wm WorkMessage
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wm); err != nil || wm.NotificationID == "" || wm.Channel != c {
		return wm, ErrMalformedWorkMessage
	}
	return wm, nil
}

// EmailTagNotificationID is the SES message tag naming the notification: the
// email provider sets it, SES events carry it back to the feedback function.
const EmailTagNotificationID = "notificationId"

// EmailTagDueAt is the SES message tag carrying when the notification was
// due (DueAt), in Unix milliseconds: the feedback function measures
// accepted → delivered from it without reading the notification.
const EmailTagDueAt = "dueAt"

// DueAt is when the notification was due: its acceptance, or its sendAt
// when later (a deliberate sendAt is not delay). Delivery latencies run
// from it.
func (n *Notification) DueAt() time.Time { return Latest(n.CreatedAt, n.SendAt) }

// WorkItem is a work message addressed to its queue.
type WorkItem struct {
	Message  WorkMessage
	Priority Priority
}
