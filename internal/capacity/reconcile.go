package capacity

import (
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/campaign"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

// DeferredReconcile prices one campaign lot (1,000 recipients, one channel
// each) whose deliveries are all deferred — a campaign scheduled ahead, or
// held by quiet hours — per day of the deferral. A recount reads the lot,
// META and every pending delivery (a strongly consistent BatchGetItem: one
// read unit a delivery, present or not). Recounted every
// CampaignReconcileDelay, the lot costs that all day while nothing can
// change; waiting for the earliest due time (campaign.NextReconcile), it
// costs a queue message every campaign.ReconcileWaitStep (15 minutes, SQS's
// longest delay, at the 30 s default: a receive, a delete, a send and an
// invocation each) and no read.
type DeferredReconcile struct {
	Recipients   int     `json:"recipients"`
	DelaySeconds float64 `json:"delaySeconds"`
	// ReadUnitsPerRecount: the lot, META and the pending deliveries.
	ReadUnitsPerRecount float64 `json:"readUnitsPerRecount"`
	// Polling: a recount every DelaySeconds, per lot and day.
	PollingRecountsPerDay  float64 `json:"pollingRecountsPerDay"`
	PollingReadUnitsPerDay float64 `json:"pollingReadUnitsPerDay"`
	PollingUSDPerDay       float64 `json:"pollingUSDPerDay"`
	// Waiting: what a lot costs now, per day before its due time.
	WaitingMessagesPerDay  float64 `json:"waitingMessagesPerDay"`
	WaitingReadUnitsPerDay float64 `json:"waitingReadUnitsPerDay"`
	WaitingUSDPerDay       float64 `json:"waitingUSDPerDay"`
}

// DeferredReconcileCost prices a deferred lot's reconciles at the profile's
// reconcile delay, from the sizes the store's item builders give.
func DeferredReconcileCost(p Prices, prof Profile) (DeferredReconcile, error) {
	s := dynamo.New(nil, "model")
	now := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	c := &domain.Campaign{ID: peakCampaign, Caller: "arn:aws:sts::123456789012:assumed-role/app/session", Type: "reservation.approved",
		Priority: domain.PriorityLow, Status: domain.CampaignRunning, CreatedAt: now, StartedAt: now, SendAt: now.Add(24 * time.Hour)}
	meta, _, err := s.CampaignItemKeys(c)
	if err != nil {
		return DeferredReconcile{}, err
	}
	ids := make([]string, domain.MaxChunkRecipients)
	for i := range ids {
		ids[i] = fmt.Sprintf("user-%030d", i)
	}
	lot, err := s.LotItemKeys(c.ID, &domain.CampaignLot{Chunk: domain.ChunkKey(0), Total: len(ids), Pending: ids, Counts: domain.CampaignCounts{Notified: len(ids)}, Version: 1})
	if err != nil {
		return DeferredReconcile{}, err
	}
	d, err := s.DeliveryItemKeys(&domain.Delivery{NotificationID: domain.CampaignNotificationID(c.ID, ids[0]), Channel: domain.ChannelEmail, UserID: ids[0],
		Priority: c.Priority, Status: domain.StatusDeferred, Reason: domain.ReasonScheduled, UpdatedAt: now, DueAt: c.SendAt, Caller: c.Caller, Type: c.Type, CampaignID: c.ID})
	if err != nil {
		return DeferredReconcile{}, err
	}
	day := (24 * time.Hour).Seconds()
	r := DeferredReconcile{Recipients: len(ids), DelaySeconds: prof.CampaignReconcileSeconds,
		ReadUnitsPerRecount: dynamo.ReadUnits(lot.Size, true) + dynamo.ReadUnits(meta.Size, true) + float64(len(ids))*dynamo.ReadUnits(d.Size, true)}
	// Each message: received, deleted, the next one sent; one invocation.
	message := 3*p.SQSRequest + p.LambdaRequest + campaignSecondsPerStep*apiMemoryGB*p.LambdaGBSecond
	r.PollingRecountsPerDay = day / r.DelaySeconds
	r.PollingReadUnitsPerDay = r.PollingRecountsPerDay * r.ReadUnitsPerRecount
	r.PollingUSDPerDay = r.PollingRecountsPerDay*message + r.PollingReadUnitsPerDay*p.ReadRequestUnit
	r.WaitingMessagesPerDay = day / campaign.ReconcileWaitStep(time.Duration(r.DelaySeconds*float64(time.Second))).Seconds()
	r.WaitingUSDPerDay = r.WaitingMessagesPerDay * message
	return r, nil
}
