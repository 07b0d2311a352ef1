// Package ops is Herald's operator tooling behind `herald dlq`: it finds a
// deployment's queues and table (CloudFormation outputs, environment, or the
// local stack's state file), inspects the dead-letter queues without
// consuming them, redrives parked messages with their deliveries reset, and
// purges. It prints identifiers, states and error codes, never addresses,
// numbers or message text.
package ops

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"strings"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/policy"
	"github.com/heraldhq/herald/internal/queue"
)

// DLQ is one dead-letter queue of a deployment.
type DLQ struct {
	// Name is the short stable name the commands take: email, sms, push,
	// relay, release, campaign, feedback, events, live.
	Name string
	// LogicalID is the queue's logical id in template.yaml (EmailDLQ).
	LogicalID string
	// Channel is the channel whose work queues redrive here; "" for the
	// other DLQs.
	Channel domain.Channel
	URL     string
}

// QueueName is the physical queue name, the last path segment of its URL.
func (q DLQ) QueueName() string { return queueNameOf(q.URL) }

func queueNameOf(u string) string {
	if p, err := url.Parse(u); err == nil && p.Path != "" {
		return path.Base(p.Path)
	}
	return path.Base(u)
}

// RelayDLQName is the name of the relay's on-failure destination.
const RelayDLQName = "relay"

// ReleaseDLQName is the name of the release queue's DLQ: release messages
// (one due partition each) the scheduler failed to release three times.
const ReleaseDLQName = "release"

// releaseQueueLogicalID is the queue release messages are redriven to.
const releaseQueueLogicalID = "ReleaseQueue"

// CampaignDLQName is the name of the campaign queue's DLQ: campaign steps
// (plan, scan, lot, reconcile) the campaign function failed three times.
const CampaignDLQName = "campaign"

// FeedbackDLQName is the name of the feedback function's DLQ: SES events
// (in their SNS notification) the function failed on after Lambda's two
// retries of an asynchronous invocation. Inspected and purged; not
// redriven (ErrNoRedrive).
const FeedbackDLQName = "feedback"

// campaignQueueLogicalID is the queue campaign steps are redriven to.
const campaignQueueLogicalID = "CampaignQueue"

// EventsDLQName is the name of the events DLQ: delivery and campaign events
// PutEvents refused after the relay's retries.
const EventsDLQName = "events"

// LiveDLQName is the name of the live queue's DLQ: live inbox messages
// (inbox changes to post, broadcast pages, connections to close) the
// poster could not decode three times. Inspected and purged; not
// redriven (ErrLiveNotRedriven).
const LiveDLQName = "live"

// dlqs are the dead-letter queues template.yaml declares, in display order.
var dlqs = []DLQ{
	{Name: "email", LogicalID: "EmailDLQ", Channel: domain.ChannelEmail},
	{Name: "sms", LogicalID: "SmsDLQ", Channel: domain.ChannelSMS},
	{Name: "push", LogicalID: "PushDLQ", Channel: domain.ChannelPush},
	{Name: RelayDLQName, LogicalID: "RelayDLQ"},
	{Name: ReleaseDLQName, LogicalID: "ReleaseDLQ"},
	{Name: CampaignDLQName, LogicalID: "CampaignDLQ"},
	{Name: FeedbackDLQName, LogicalID: "FeedbackDLQ"},
	{Name: EventsDLQName, LogicalID: "EventsDLQ"},
	{Name: LiveDLQName, LogicalID: "LiveDLQ"},
}

// optionalDLQs may be absent from a deployment description (one made before
// they existed); the commands then do not list them.
var optionalDLQs = map[string]bool{"EventsDLQ": true, "LiveDLQ": true}

// WorkQueueLogicalID is a work queue's logical id in template.yaml
// (email, high → EmailHighQueue).
func WorkQueueLogicalID(c domain.Channel, p domain.Priority) string {
	return title(string(c)) + title(string(p)) + "Queue"
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Target is one deployment of Herald as the commands see it.
type Target struct {
	Table string
	// DLQs are the dead-letter queues, in display order.
	DLQs []DLQ
	// Work maps each work queue name (domain.QueueName: "email-high") to its URL.
	Work map[string]string
	// Release is the scheduler's release queue (where a release DLQ redrive
	// sends its messages back).
	Release string
	// Campaign is the campaign queue (where a campaign DLQ redrive sends its
	// steps back).
	Campaign string
	// EventBus is the event bus's name (where an events DLQ redrive
	// publishes); "" when the description does not name it.
	EventBus string
	// Relay is the environment the deployed relay function runs with (its
	// rate limits, window, retention, …): a relay DLQ redrive builds the
	// relay with it, as Lambda does. Resolve fills it; nil leaves only the
	// table and queue settings (RelayEnv).
	Relay map[string]string
}

// TargetFromURLs builds a target from queue URLs keyed by template logical id
// (EmailDLQ, EmailHighQueue, ReleaseQueue, CampaignQueue, …) and the table name, naming
// whatever is missing.
func TargetFromURLs(table string, byLogicalID map[string]string) (Target, error) {
	t := Target{Table: table, Work: map[string]string{}, Release: byLogicalID[releaseQueueLogicalID], Campaign: byLogicalID[campaignQueueLogicalID]}
	var missing []string
	if table == "" {
		missing = append(missing, "table name")
	}
	if t.Release == "" {
		missing = append(missing, releaseQueueLogicalID)
	}
	if t.Campaign == "" {
		missing = append(missing, campaignQueueLogicalID)
	}
	for _, q := range dlqs {
		q.URL = byLogicalID[q.LogicalID]
		if q.URL == "" && optionalDLQs[q.LogicalID] {
			continue
		}
		if q.URL == "" {
			missing = append(missing, q.LogicalID)
		}
		t.DLQs = append(t.DLQs, q)
	}
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			u := byLogicalID[WorkQueueLogicalID(c, p)]
			if u == "" {
				missing = append(missing, WorkQueueLogicalID(c, p))
			}
			t.Work[domain.QueueName(c, p)] = u
		}
	}
	if len(missing) > 0 {
		return Target{}, fmt.Errorf("incomplete deployment description, missing: %s", strings.Join(missing, ", "))
	}
	return t, nil
}

// TargetFromOutputs reads the stack outputs template.yaml declares:
// TableName and <LogicalId>Url for every queue.
func TargetFromOutputs(outputs map[string]string) (Target, error) {
	urls := map[string]string{}
	for k, v := range outputs {
		if id, ok := strings.CutSuffix(k, "Url"); ok {
			urls[id] = v
		}
	}
	t, err := TargetFromURLs(outputs["TableName"], urls)
	t.EventBus = outputs["EventBusName"]
	return t, err
}

// DLQEnvName is the environment variable naming a DLQ's URL (EMAIL_DLQ_URL).
func DLQEnvName(name string) string { return strings.ToUpper(name) + "_DLQ_URL" }

// ReleaseQueueEnv names the release queue's URL, as the scheduler reads it.
const ReleaseQueueEnv = "RELEASE_QUEUE_URL"

// TargetFromEnv reads TABLE_NAME, the work queue variables the functions use
// (EMAIL_HIGH_QUEUE_URL, …, RELEASE_QUEUE_URL, CAMPAIGN_QUEUE_URL) and
// EMAIL_DLQ_URL, SMS_DLQ_URL, PUSH_DLQ_URL, RELAY_DLQ_URL, RELEASE_DLQ_URL,
// CAMPAIGN_DLQ_URL, FEEDBACK_DLQ_URL (EVENTS_DLQ_URL, LIVE_DLQ_URL
// optional). ok is false when none of them is set.
func TargetFromEnv(getenv func(string) string) (t Target, ok bool, err error) {
	urls := map[string]string{}
	ok = getenv("TABLE_NAME") != ""
	if v := getenv(ReleaseQueueEnv); v != "" {
		urls[releaseQueueLogicalID], ok = v, true
	}
	if v := getenv(queue.CampaignQueueEnv); v != "" {
		urls[campaignQueueLogicalID], ok = v, true
	}
	for _, q := range dlqs {
		if v := getenv(DLQEnvName(q.Name)); v != "" {
			urls[q.LogicalID], ok = v, true
		}
	}
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			if v := getenv(queue.EnvName(c, p)); v != "" {
				urls[WorkQueueLogicalID(c, p)], ok = v, true
			}
		}
	}
	if !ok {
		return Target{}, false, nil
	}
	t, err = TargetFromURLs(getenv("TABLE_NAME"), urls)
	if err != nil {
		return Target{}, true, fmt.Errorf("environment: %w", err)
	}
	t.EventBus = getenv("EVENT_BUS_NAME")
	t.Relay = relayEnvFromProcess(getenv)
	return t, true, nil
}

// UnknownQueueError names a queue argument that matches no DLQ.
type UnknownQueueError struct {
	Arg   string
	Known []string
}

func (e *UnknownQueueError) Error() string {
	return fmt.Sprintf("unknown queue %q: want one of %s", e.Arg, strings.Join(e.Known, ", "))
}

// DLQ finds a dead-letter queue by short name, logical id, physical queue
// name or URL.
func (t Target) DLQ(arg string) (DLQ, error) {
	for _, q := range t.DLQs {
		if strings.EqualFold(arg, q.Name) || strings.EqualFold(arg, q.LogicalID) || arg == q.QueueName() || arg == q.URL {
			return q, nil
		}
	}
	var known []string
	for _, q := range t.DLQs {
		known = append(known, q.Name)
	}
	for _, q := range t.DLQs {
		known = append(known, q.QueueName())
	}
	return DLQ{}, &UnknownQueueError{Arg: arg, Known: known}
}

// RelayFunctionLogicalID is the relay function's logical id in template.yaml.
const RelayFunctionLogicalID = "RelayFunction"

// RelayEnv is the environment the relay function runs with, for re-running
// it from the command line: the deployed function's (Relay), over the
// table and work queues of t.
func (t Target) RelayEnv() map[string]string {
	// Re-planning hands the relay notification records only: no events.
	env := map[string]string{"TABLE_NAME": t.Table, "DELIVERY_EVENTS": "none"}
	for _, c := range domain.Channels {
		for _, p := range domain.Priorities {
			env[queue.EnvName(c, p)] = t.Work[domain.QueueName(c, p)]
		}
	}
	maps.Copy(env, t.Relay)
	return env
}

// relayEnvFromProcess is the relay's configuration when the deployment is
// described by environment variables: the relay's own settings, read from
// the same environment.
func relayEnvFromProcess(getenv func(string) string) map[string]string {
	names := []string{"RATE_LIMIT_WINDOW", "RETENTION_DAYS", "LOG_LEVEL"}
	for _, c := range domain.Channels {
		names = append(names, policy.LimitEnv(c))
	}
	env := map[string]string{}
	for _, n := range names {
		if v := getenv(n); v != "" {
			env[n] = v
		}
	}
	return env
}

// workQueueFor returns the work queue a delivery travels on.
func (t Target) workQueueFor(c domain.Channel, p domain.Priority) (string, error) {
	u := t.Work[domain.QueueName(c, p)]
	if u == "" {
		return "", fmt.Errorf("no work queue for %s", domain.QueueName(c, p))
	}
	return u, nil
}
