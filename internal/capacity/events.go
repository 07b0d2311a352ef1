package capacity

import (
	"math"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/events"
)

// Delivery events (DeliveryEvents): PutEvents bills each entry per 64 KB
// chunk; each event's record also rides in a bulk relay invocation (batches
// of up to 100 records at load) whose PutEvents call takes about 20 ms per
// 10 entries.
const (
	eventChunkBytes         = 64 * 1024
	eventRecordsPerBatch    = 100
	relaySecondsPerEventPut = 0.020 / events.MaxEntriesPerPut
	relayMemoryGB           = 0.25
)

// eventsPerDelivery are the events one delivery on c publishes on the
// nominal path under mode: sent, and for email SES's delivered (when SES's
// delivery notifications arrive: sesFeedback). Failures mode publishes
// nothing on it (one event per failed, bounced, complained or dropped
// delivery: EventCostPerFailure).
func eventsPerDelivery(c domain.Channel, mode events.Mode, sesFeedback bool) float64 {
	if mode != events.ModeAll {
		return 0
	}
	if c == domain.ChannelEmail && sesFeedback {
		return 2
	}
	return 1
}

// EventEntriesPerNotification are the billed PutEvents entries (64 KB
// chunks) one notification of kind k publishes on the nominal path under
// mode; sesFeedback counts SES's delivered event of each email (the local
// stack's SES sends no delivery notifications, so the cost benchmark runs
// without).
func EventEntriesPerNotification(k Kind, mode events.Mode, sesFeedback bool) float64 {
	n := 0.0
	for _, c := range k.Channels {
		n += eventsPerDelivery(c, mode, sesFeedback)
	}
	return n * eventEntryChunks()
}

// EventsCostPerMillion is the $ per million notifications of kind k that
// delivery events add under mode: PutEvents and the relay's share (batches
// of eventRecordsPerBatch records).
func EventsCostPerMillion(k Kind, mode events.Mode, sesFeedback bool, p Prices) float64 {
	return eventCost(EventEntriesPerNotification(k, mode, sesFeedback)/eventEntryChunks(), p) * 1e6
}

// eventEntryChunks is the billed 64 KB chunks of one delivery event, from a
// real entry with the longest fields the API accepts for ids.
func eventEntryChunks() float64 {
	long := strings.Repeat("x", 128)
	d := &domain.Delivery{NotificationID: "n" + strings.Repeat("0", 26), Channel: domain.ChannelEmail, UserID: long,
		Status: domain.StatusFailed, Reason: domain.ReasonProviderError, Attempts: 6, UpdatedAt: time.Now(),
		Caller: "arn:aws:iam::123456789012:role/" + long, Type: long, CampaignID: long, ResourceID: long}
	e, _, _ := events.DeliveryEntry(events.ModeAll, nil, d)
	return math.Ceil(float64(e.Size()) / eventChunkBytes)
}

// eventCost is the $ of n events: PutEvents, plus the relay's share.
func eventCost(n float64, p Prices) float64 {
	return n * (eventEntryChunks()*p.EventBridgeEvent +
		p.LambdaRequest/eventRecordsPerBatch + relaySecondsPerEventPut*relayMemoryGB*p.LambdaGBSecond)
}

// EventsPerMillion is the $ per million notifications of kind k that
// delivery events add under each DeliveryEvents mode (nominal path: every
// delivery sent, every email delivered).
func EventsPerMillion(k Kind, p Prices) map[string]float64 {
	out := map[string]float64{}
	for _, m := range []events.Mode{events.ModeNone, events.ModeFailures, events.ModeAll} {
		out[string(m)] = round2(EventsCostPerMillion(k, m, true, p))
	}
	return out
}

// EventCostPerMillionFailures is the $ per million failed (bounced,
// complained, dropped) deliveries under failures or all.
func EventCostPerMillionFailures(p Prices) float64 { return round2(eventCost(1, p) * 1e6) }
