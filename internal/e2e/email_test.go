package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// TestEmailEndToEnd is the foundation's acceptance test: one POST becomes one
// email in the SES emulator, through every real component.
func TestEmailEndToEnd(t *testing.T) {
	user := stacktest.UniqueID("u")
	addr := user + "@example.com"
	body := `{"type":"invoice.payment_failed","recipient":{"userId":"` + user + `","email":"` + addr + `"},"data":{"invoiceUrl":"https://example.com/i/9"}}`
	resp := stacktest.Do(t, http.MethodPost, "/v1/notifications", body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST = %d %s", resp.StatusCode, resp.Body)
	}
	var accepted struct{ ID, Status, CreatedAt string }
	resp.JSON(t, &accepted)
	if accepted.ID == "" || accepted.Status != "accepted" || resp.Header.Get("Location") != "/v1/notifications/"+accepted.ID {
		t.Fatalf("unexpected 202: %s (Location %q)", resp.Body, resp.Header.Get("Location"))
	}
	var mails []stacktest.Email
	stacktest.Eventually(t, 15*time.Second, "the email in the SES emulator", func() bool {
		mails = stacktest.EmailsTo(t, addr)
		return len(mails) > 0
	})
	if len(mails) != 1 {
		t.Fatalf("got %d emails, want 1", len(mails))
	}
	m := mails[0]
	if !strings.Contains(m.Subject, "payment failed") || !strings.Contains(m.Body.Text, "https://example.com/i/9") || !strings.Contains(m.Body.HTML, `href="https://example.com/i/9"`) {
		t.Errorf("unexpected email: %+v", m)
	}
	// Nothing else is sent later (the delivery is recorded, the message deleted).
	time.Sleep(time.Second)
	if n := len(stacktest.EmailsTo(t, addr)); n != 1 {
		t.Errorf("got %d emails after settling, want 1", n)
	}
}

func TestBadInputIsRejectedAndNotStored(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		code       string
	}{
		{"invalid JSON", `{"type":`, http.StatusBadRequest, "invalid_json"},
		{"unknown type", `{"type":"nope.nope","recipient":{"userId":"u1"},"data":{}}`, http.StatusUnprocessableEntity, "unknown_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := stacktest.Do(t, http.MethodPost, "/v1/notifications", tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tt.status, resp.Body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var p struct{ Code string }
			resp.JSON(t, &p)
			if p.Code != tt.code {
				t.Errorf("code = %q, want %q", p.Code, tt.code)
			}
		})
	}
}

func TestHealthReportsEveryPart(t *testing.T) {
	resp := stacktest.Do(t, http.MethodGet, "/_dev/health", nil)
	var h struct {
		OK       bool              `json:"ok"`
		Services map[string]string `json:"services"`
	}
	resp.JSON(t, &h)
	if resp.StatusCode != http.StatusOK || !h.OK {
		t.Fatalf("health = %d %s", resp.StatusCode, resp.Body)
	}
	for _, part := range []string{"dynamodb", "sqs", "ses", "functions"} {
		if h.Services[part] != "up" {
			t.Errorf("%s = %q, want up", part, h.Services[part])
		}
	}
}
