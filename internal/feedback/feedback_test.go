package feedback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

type fakeStore struct {
	status     domain.Status // of n1's email delivery; "" = no delivery
	suppressed []string
	omitItem   bool // Transition conflicts without returning the item
	failSuppr  error
}

func (f *fakeStore) GetNotification(_ context.Context, id string) (*domain.Notification, error) {
	if id != "n1" {
		return nil, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
	}
	return &domain.Notification{ID: id, Recipient: domain.Recipient{UserID: "u1"}}, nil
}

func (f *fakeStore) GetDelivery(_ context.Context, id string, _ domain.Channel) (*domain.Delivery, error) {
	if f.status == "" || id != "n1" {
		return nil, domain.ErrNotFound
	}
	return &domain.Delivery{NotificationID: id, Channel: domain.ChannelEmail, Status: f.status}, nil
}

func (f *fakeStore) Transition(_ context.Context, id string, _ domain.Channel, c domain.Change) (*domain.Delivery, error) {
	if f.status == "" || id != "n1" { // no such delivery: the condition fails, no item returned

		return nil, domain.ErrConflict
	}
	if !slices.Contains(domain.SourcesOf(c.To), f.status) {
		if f.omitItem {
			return nil, domain.ErrConflict
		}
		return &domain.Delivery{Status: f.status}, domain.ErrConflict
	}
	f.status = c.To
	return &domain.Delivery{NotificationID: id, Status: c.To, Priority: domain.PriorityNormal}, nil
}

func (f *fakeStore) SuppressEmail(_ context.Context, userID, address string) error {
	if f.failSuppr != nil {
		return f.failSuppr
	}
	f.suppressed = append(f.suppressed, userID+"/"+address)
	return nil
}

func sesEvent(typ, notificationID, extra string) string {
	tags := ""
	if notificationID != "" {
		tags = fmt.Sprintf(`"tags":{"notificationId":[%q],"type":["reservation_approved"]},`, notificationID)
	}
	return fmt.Sprintf(`{"eventType":%q,"mail":{%s"messageId":"ses-1","destination":["a@example.com"]}%s}`, typ, tags, extra)
}

func snsEvent(msg string) events.SNSEvent {
	return events.SNSEvent{Records: []events.SNSEventRecord{{EventSource: "aws:sns", SNS: events.SNSEntity{MessageID: "m1", Type: "Notification", Message: msg}}}}
}

func TestHandle(t *testing.T) {
	hardBounce := `,"bounce":{"bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":"A@example.com"}]}`
	softBounce := `,"bounce":{"bounceType":"Transient","bounceSubType":"MailboxFull","bouncedRecipients":[{"emailAddress":"a@example.com"}]}`
	complaint := `,"complaint":{"complainedRecipients":[{"emailAddress":"a@example.com"}],"complaintFeedbackType":"abuse"}`
	tests := []struct {
		name       string
		from       domain.Status
		msg        string
		omitItem   bool
		want       domain.Status
		suppressed []string
		wantErr    bool
	}{
		{"delivery", domain.StatusSent, sesEvent("Delivery", "n1", ""), false, domain.StatusDelivered, nil, false},
		{"hard bounce suppresses", domain.StatusSent, sesEvent("Bounce", "n1", hardBounce), false, domain.StatusBounced, []string{"u1/A@example.com"}, false},
		{"hard bounce after delivery", domain.StatusDelivered, sesEvent("Bounce", "n1", hardBounce), false, domain.StatusBounced, []string{"u1/A@example.com"}, false},
		{"soft bounce does not suppress", domain.StatusSent, sesEvent("Bounce", "n1", softBounce), false, domain.StatusBounced, nil, false},
		{"complaint suppresses", domain.StatusDelivered, sesEvent("Complaint", "n1", complaint), false, domain.StatusComplained, []string{"u1/a@example.com"}, false},
		{"complaint without recipients uses the destination", domain.StatusSent, sesEvent("Complaint", "n1", `,"complaint":{}`), false, domain.StatusComplained, []string{"u1/a@example.com"}, false},
		{"identity notification format", domain.StatusSent, strings.Replace(sesEvent("Delivery", "n1", ""), "eventType", "notificationType", 1), false, domain.StatusDelivered, nil, false},
		{"duplicate delivery event", domain.StatusDelivered, sesEvent("Delivery", "n1", ""), false, domain.StatusDelivered, nil, false},
		{"delivery after bounce keeps bounced", domain.StatusBounced, sesEvent("Delivery", "n1", ""), false, domain.StatusBounced, nil, false},
		{"event before sent is recorded: retried", domain.StatusSending, sesEvent("Delivery", "n1", ""), false, domain.StatusSending, nil, true},
		{"event before sent, store omits the item", domain.StatusSending, sesEvent("Delivery", "n1", ""), true, domain.StatusSending, nil, true},
		{"bounce before sent still suppresses, then retries", domain.StatusSending, sesEvent("Bounce", "n1", hardBounce), false, domain.StatusSending, []string{"u1/A@example.com"}, true},
		{"unknown notification", domain.StatusSent, sesEvent("Delivery", "other", ""), false, domain.StatusSent, nil, false},
		{"no tag (not Herald's mail)", domain.StatusSent, sesEvent("Delivery", "", ""), false, domain.StatusSent, nil, false},
		{"other event types ignored", domain.StatusSent, sesEvent("Open", "n1", ""), false, domain.StatusSent, nil, false},
		{"not JSON", domain.StatusSent, "{", false, domain.StatusSent, nil, false},
		{"no email delivery", "", sesEvent("Delivery", "n1", ""), false, "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{status: tt.from, omitItem: tt.omitItem}
			var logs bytes.Buffer
			h := New(Deps{Store: store, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
			err := h.Handle(context.Background(), snsEvent(tt.msg))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Handle = %v, want error %v", err, tt.wantErr)
			}
			if store.status != tt.want {
				t.Errorf("status %s, want %s", store.status, tt.want)
			}
			if !slices.Equal(store.suppressed, tt.suppressed) {
				t.Errorf("suppressed %v, want %v", store.suppressed, tt.suppressed)
			}
			if strings.Contains(strings.ToLower(logs.String()), "a@example.com") {
				t.Errorf("address in logs: %s", logs.String())
			}
		})
	}
}

// TestFeedbackMetrics: a recorded status counts once under its metric; an
// event that changes nothing counts nothing; one flush per invocation.
func TestFeedbackMetrics(t *testing.T) {
	email := metrics.Dims{Channel: domain.ChannelEmail, Priority: domain.PriorityNormal}
	hardBounce := `,"bounce":{"bounceType":"Permanent","bouncedRecipients":[{"emailAddress":"a@example.com"}]}`
	tests := []struct {
		name string
		from domain.Status
		msg  string
		want map[metrics.Name]int
	}{
		{"delivery", domain.StatusSent, sesEvent("Delivery", "n1", ""), map[metrics.Name]int{metrics.Delivered: 1}},
		{"bounce", domain.StatusSent, sesEvent("Bounce", "n1", hardBounce), map[metrics.Name]int{metrics.Bounced: 1}},
		{"complaint", domain.StatusDelivered, sesEvent("Complaint", "n1", `,"complaint":{}`), map[metrics.Name]int{metrics.Complained: 1}},
		{"duplicate delivery", domain.StatusDelivered, sesEvent("Delivery", "n1", ""), map[metrics.Name]int{}},
		{"before sent", domain.StatusSending, sesEvent("Delivery", "n1", ""), map[metrics.Name]int{}},
		{"ignored type", domain.StatusSent, sesEvent("Open", "n1", ""), map[metrics.Name]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tally := &metrics.Tally{}
			h := New(Deps{Store: &fakeStore{status: tt.from}, Log: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), Metrics: tally})
			_ = h.Handle(context.Background(), snsEvent(tt.msg))
			for _, n := range []metrics.Name{metrics.Delivered, metrics.Bounced, metrics.Complained} {
				if got := tally.Count(n, email); got != tt.want[n] {
					t.Errorf("%s = %d, want %d", n, got, tt.want[n])
				}
			}
			if tally.Flushes() != 1 {
				t.Errorf("flushes = %d, want 1", tally.Flushes())
			}
		})
	}
}

// TestDeliveredLatency: a Delivery event recorded observes accepted →
// delivered, from the email's dueAt tag to the delivery's timestamp; an
// event without the tag, a duplicate and a bounce observe nothing.
func TestDeliveredLatency(t *testing.T) {
	email := metrics.Dims{Channel: domain.ChannelEmail, Priority: domain.PriorityNormal}
	due := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	tagged := func(typ string) string {
		return fmt.Sprintf(`{"eventType":%q,"mail":{"tags":{"notificationId":["n1"],"dueAt":["%d"]},"messageId":"ses-1","destination":["a@example.com"]},"delivery":{"timestamp":%q}}`,
			typ, due.UnixMilli(), due.Add(2345*time.Millisecond).Format(time.RFC3339Nano))
	}
	tests := []struct {
		name string
		from domain.Status
		msg  string
		want []float64
	}{
		{"delivery", domain.StatusSent, tagged("Delivery"), []float64{2345}},
		{"no dueAt tag", domain.StatusSent, sesEvent("Delivery", "n1", `,"delivery":{"timestamp":"2026-12-06T05:00:02Z"}`), nil},
		{"duplicate", domain.StatusDelivered, tagged("Delivery"), nil},
		{"bounce", domain.StatusSent, tagged("Bounce"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tally := &metrics.Tally{}
			h := New(Deps{Store: &fakeStore{status: tt.from}, Log: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), Metrics: tally})
			_ = h.Handle(context.Background(), snsEvent(tt.msg))
			if got := tally.Values(metrics.DeliveredLatency, email); !slices.Equal(got, tt.want) {
				t.Errorf("DeliveredLatency = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStoreErrorsAreRetried(t *testing.T) {
	store := &fakeStore{status: domain.StatusSent, failSuppr: errors.New("throttled")}
	h := New(Deps{Store: store, Log: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))})
	msg := sesEvent("Complaint", "n1", `,"complaint":{"complainedRecipients":[{"emailAddress":"a@example.com"}]}`)
	if err := h.Handle(context.Background(), snsEvent(msg)); err == nil {
		t.Fatal("store error swallowed: the event would be lost")
	}
	if store.status != domain.StatusSent {
		t.Fatalf("status changed to %s before the suppression was stored", store.status)
	}
}

// TestSampleEventDecodes keeps the Event struct in step with SES's format.
func TestSampleEventDecodes(t *testing.T) {
	raw := `{"eventType":"Bounce","bounce":{"feedbackId":"x","bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":"r@example.com","action":"failed","status":"5.1.1","diagnosticCode":"smtp; 550 5.1.1 user unknown"}],"timestamp":"2026-03-01T00:00:00.000Z","reportingMTA":"dns; x"},"mail":{"timestamp":"2026-03-01T00:00:00.000Z","source":"n@example.com","sendingAccountId":"1","messageId":"m","destination":["r@example.com"],"headersTruncated":false,"tags":{"ses:configuration-set":["c"],"notificationId":["n1"],"type":["t"]}}}`
	var e Event
	if err := json.Unmarshal([]byte(raw), &e); err != nil || e.Type() != "Bounce" || e.Bounce.BounceType != "Permanent" ||
		e.Bounce.BouncedRecipients[0].EmailAddress != "r@example.com" || e.Mail.Tags["notificationId"][0] != "n1" {
		t.Fatalf("decoded %+v, %v", e, err)
	}
}
