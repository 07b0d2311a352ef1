package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/domain"
)

// CampaignStep is a campaign DLQ message as the commands print it: which
// campaign and which step, never the recipients (a scan's After is a user
// id, so it is left out).
type CampaignStep struct {
	CampaignID string `json:"campaignId"`
	Kind       string `json:"kind"`
	// Chunk names the lot of a lot or reconcile step.
	Chunk string `json:"chunk,omitempty"`
	// Segment, Segments and Page place a scan step.
	Segment  *int `json:"segment,omitempty"`
	Segments int  `json:"segments,omitempty"`
	Page     int  `json:"page,omitempty"`
	// CampaignStatus is the campaign's status now ("" when it is no longer
	// stored).
	CampaignStatus string `json:"campaignStatus,omitempty"`
}

// Place is the step's chunk or scan segment, in a few words ("" for a plan).
func (s CampaignStep) Place() string {
	switch {
	case s.Chunk != "":
		return "chunk " + s.Chunk
	case s.Segment != nil:
		return fmt.Sprintf("segment %d of %d, page %d", *s.Segment, s.Segments, s.Page)
	}
	return ""
}

func campaignStepOf(m domain.CampaignMessage) CampaignStep {
	s := CampaignStep{CampaignID: m.CampaignID, Kind: string(m.Kind), Chunk: m.Chunk}
	if m.Kind == domain.CampaignScan {
		seg := m.Segment
		s.Segment, s.Segments, s.Page = &seg, m.Segments, m.Page
	}
	return s
}

// campaignStatuses reads each campaign's status once per command: a DLQ
// often holds several steps of the same campaign.
type campaignStatuses struct {
	store Store
	seen  map[string]string
}

// status is the campaign's status, "" when it is no longer stored; errors are
// the table's.
func (c *campaignStatuses) status(ctx context.Context, id string) (string, error) {
	if s, ok := c.seen[id]; ok {
		return s, nil
	}
	if c.seen == nil {
		c.seen = map[string]string{}
	}
	camp, err := c.store.GetCampaign(ctx, id)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		c.seen[id] = ""
		return "", nil
	case err != nil:
		return "", err
	}
	c.seen[id] = string(camp.Status)
	return c.seen[id], nil
}

const malformedCampaignStep = "malformed body: not a campaign step"

// describeCampaignMessage fills a campaign DLQ message's step and its
// campaign's status. A body that is no campaign step gets a problem, not an
// error; errors are the table's.
func (o *Operator) describeCampaignMessage(ctx context.Context, statuses *campaignStatuses, m sqstypes.Message, out *Parked) error {
	cm, err := domain.DecodeCampaignMessage(aws.ToString(m.Body))
	if err != nil {
		out.Problem = malformedCampaignStep
		return nil
	}
	step := campaignStepOf(cm)
	if step.CampaignStatus, err = statuses.status(ctx, cm.CampaignID); err != nil {
		return err
	}
	if step.CampaignStatus == "" {
		out.Problem = "campaign no longer stored: the step would do nothing"
	}
	out.Campaign = &step
	return nil
}

// campaignNote says what running the step again does, given its campaign's
// status.
func campaignNote(status string) string {
	switch domain.CampaignStatus(status) {
	case domain.CampaignRunning:
		return "campaign running: the step runs again (steps are idempotent)"
	case domain.CampaignDone, domain.CampaignCancelled:
		return "campaign " + status + ": the step does nothing when it runs (harmless; or purge it)"
	case "":
		return "campaign no longer stored: the step does nothing when it runs (harmless; or purge it)"
	}
	return "campaign " + status + ": the step runs again (steps are idempotent)"
}

// planCampaign decides what to do with one campaign DLQ message: a step goes
// back to the campaign queue unchanged (every step is idempotent, and one of
// a finished campaign does nothing), a malformed body stays.
func (o *Operator) planCampaign(ctx context.Context, statuses *campaignStatuses, m sqstypes.Message) (RedriveItem, error) {
	it := RedriveItem{MessageID: aws.ToString(m.MessageId)}
	cm, err := domain.DecodeCampaignMessage(aws.ToString(m.Body))
	if err != nil {
		it.Action, it.Note = ActionLeave, malformedCampaignStep+" (purge it once read)"
		return it, nil
	}
	step := campaignStepOf(cm)
	if step.CampaignStatus, err = statuses.status(ctx, cm.CampaignID); err != nil {
		return it, err
	}
	it.Campaign = &step
	it.Action, it.Note = ActionResend, campaignNote(step.CampaignStatus)
	return it, nil
}

// redriveCampaign sends campaign DLQ messages back to the campaign queue,
// body unchanged, one by one at the given rate, selected by message id or
// campaign id (every parked step of that campaign), or all.
func (o *Operator) redriveCampaign(ctx context.Context, q DLQ, opts RedriveOptions, res RedriveResult) (RedriveResult, error) {
	if o.Target.Campaign == "" {
		return res, fmt.Errorf("no campaign queue in the deployment description")
	}
	statuses := &campaignStatuses{store: o.Store}
	return o.redriveParked(ctx, q, opts, res, parkedRedrive{
		ids: "message or campaign",
		keys: func(m sqstypes.Message) []string {
			keys := []string{aws.ToString(m.MessageId)}
			if cm, err := domain.DecodeCampaignMessage(aws.ToString(m.Body)); err == nil {
				keys = append(keys, cm.CampaignID)
			}
			return keys
		},
		plan: func(ctx context.Context, m sqstypes.Message) (RedriveItem, func(*RedriveItem) bool, error) {
			it, err := o.planCampaign(ctx, statuses, m)
			return it, o.resendTo(ctx, q, m, o.Target.Campaign), err
		},
	})
}
