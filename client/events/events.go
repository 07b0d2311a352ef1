// Package events holds the types of the events Herald publishes on its
// EventBridge bus, so a Go consumer (an SQS queue's reader, a Lambda target)
// decodes them without writing structs.
//
// Every event has source "herald" and one of two detail types:
//
//	Delivery State Change  detail: DeliveryDetail
//	Campaign State Change  detail: CampaignDetail
//
// Events are published at least once: a consumer deduplicates on the
// detail's EventID, which is the same for every publication of one state
// (it is derived from the notification, channel, status and attempts, or
// from the campaign and status). Details carry no addresses, phone numbers,
// tokens or message content. The JSON Schemas of both details are in the
// repository's events/schemas.
package events

import (
	"encoding/json"
	"fmt"
	"time"
)

// Source is the source of every Herald event.
const Source = "herald"

// Detail types.
const (
	DeliveryDetailType = "Delivery State Change"
	CampaignDetailType = "Campaign State Change"
)

// Version is the detail's schema version; a change that breaks consumers
// gets a new one.
const Version = "1"

// Delivery statuses an event reports.
const (
	StatusSent       = "sent"
	StatusDelivered  = "delivered"
	StatusBounced    = "bounced"
	StatusComplained = "complained"
	StatusFailed     = "failed"
	StatusDropped    = "dropped"
	StatusSkipped    = "skipped"
)

// Campaign statuses an event reports.
const (
	CampaignStarted   = "started"
	CampaignFinished  = "finished"
	CampaignCancelled = "cancelled"
	// CampaignProgress: a running campaign's outcomes crossed another tenth
	// of its recipients (at most nine a campaign), with its estimate then.
	CampaignProgress = "progress"
)

// DeliveryDetail is the detail of a "Delivery State Change": one delivery (a
// notification on one channel) reached Status.
type DeliveryDetail struct {
	// EventID is the same for every publication of this state: deduplicate on it.
	EventID        string `json:"eventId"`
	Version        string `json:"version"`
	NotificationID string `json:"notificationId"`
	Type           string `json:"type"`
	// Caller is the service that sent the notification (its caller id).
	Caller  string `json:"caller"`
	UserID  string `json:"userId"`
	Channel string `json:"channel"` // email, sms, push
	Status  string `json:"status"`
	// Reason says why a delivery was skipped, dropped, failed, bounced or
	// complained about ("" when none).
	Reason   string `json:"reason,omitempty"`
	Attempts int    `json:"attempts"`
	// Provider is the provider of the latest attempt, the one that sent a
	// sent delivery: "ses:<region>" (the stack's region or the failover
	// region), "sns" or "sms-voice"; "" for push and before any attempt.
	Provider string `json:"provider,omitempty"`
	// At is when the state was recorded.
	At         time.Time `json:"at"`
	CampaignID string    `json:"campaignId,omitempty"`
	ResourceID string    `json:"resourceId,omitempty"`
}

// CampaignCounts are a campaign's outcomes so far.
type CampaignCounts struct {
	Recipients int `json:"recipients"`
	Notified   int `json:"notified"`
	Sent       int `json:"sent"`
	Skipped    int `json:"skipped"`
	Failed     int `json:"failed"`
	Dropped    int `json:"dropped"`
}

// CampaignDetail is the detail of a "Campaign State Change".
type CampaignDetail struct {
	EventID    string         `json:"eventId"`
	Version    string         `json:"version"`
	CampaignID string         `json:"campaignId"`
	Type       string         `json:"type"`
	Caller     string         `json:"caller"`
	Status     string         `json:"status"` // started, progress, finished, cancelled
	At         time.Time      `json:"at"`
	Counts     CampaignCounts `json:"counts"`
	// EstimatedCompletionAt is when the campaign should be done, estimated
	// at At (finished: its finish; nil: no rate bounds it); Estimate the
	// rate it assumes.
	EstimatedCompletionAt *time.Time        `json:"estimatedCompletionAt"`
	Estimate              *CampaignEstimate `json:"estimate,omitempty"`
}

// CampaignEstimate is the rate a campaign's estimate assumes: the slowest of
// each channel's provider rate for its priority (low: the bulk share of the
// effective quota) and the fan-out's, plus a tail: one recount after the
// last send and, when a quota paces a channel, the longest quota deferral.
// A nil rate bounds nothing.
type CampaignEstimate struct {
	RecipientsLeft      int           `json:"recipientsLeft"`
	RecipientsPerSecond float64       `json:"recipientsPerSecond"`
	FanOutPerSecond     *float64      `json:"fanOutPerSecond"`
	TailSeconds         float64       `json:"tailSeconds"`
	Channels            []ChannelRate `json:"channels"`
}

// ChannelRate is one channel's send rate in a campaign's estimate, and the
// recipients that may still need a send on it (every recipient left).
type ChannelRate struct {
	Channel        string   `json:"channel"`
	SendsPerSecond *float64 `json:"sendsPerSecond"`
	RecipientsLeft int      `json:"recipientsLeft"`
}

// Event is an EventBridge event as a target receives it (an SQS message
// body, a Lambda's input), with its detail still raw: decode it with
// Delivery or Campaign after checking DetailType.
type Event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"` // EventBridge's id: differs per publication; deduplicate on the detail's EventID
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       time.Time       `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// Delivery decodes the detail of a "Delivery State Change".
func (e *Event) Delivery() (*DeliveryDetail, error) {
	if e.Source != Source || e.DetailType != DeliveryDetailType {
		return nil, fmt.Errorf("event %s/%q is not a %s", e.Source, e.DetailType, DeliveryDetailType)
	}
	var d DeliveryDetail
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return nil, fmt.Errorf("delivery event detail: %w", err)
	}
	return &d, nil
}

// Campaign decodes the detail of a "Campaign State Change".
func (e *Event) Campaign() (*CampaignDetail, error) {
	if e.Source != Source || e.DetailType != CampaignDetailType {
		return nil, fmt.Errorf("event %s/%q is not a %s", e.Source, e.DetailType, CampaignDetailType)
	}
	var d CampaignDetail
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return nil, fmt.Errorf("campaign event detail: %w", err)
	}
	return &d, nil
}

// Parse decodes an event as a target receives it.
func Parse(data []byte) (*Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("event: %w", err)
	}
	return &e, nil
}
