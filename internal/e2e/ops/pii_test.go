package ops

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
)

// TestLogsCarryNoPersonalData sends notifications with recognisable
// addresses, numbers and text over every channel (and through a retried SMS
// failure), waits for every delivery, and then searches ALL function logs of
// this package's run (the DLQ tests' included) for any of them.
func TestLogsCarryNoPersonalData(t *testing.T) {
	st := stacktest.Stack(t)
	ctx := context.Background()
	n := time.Now().UnixNano() % 1_000_000
	canary := fmt.Sprintf("%06d", n)
	user := stacktest.UniqueID("pii")
	email := "Canary.Mailbox." + canary + "@example.org"
	phone := "+1555" + canary + "7"
	text := "Quokka Zanzibar " + canary
	link := "https://example.com/canary-" + canary + "/secret"

	// Push: a browser subscription of the local push service, stored as the
	// users API would store it.
	subID, sub, err := st.Push.NewSubscription("")
	if err != nil {
		t.Fatal(err)
	}
	if err := stacktest.Store(t).AddPushSubscription(ctx, user, domain.PushSubscription{
		ID: "sub-" + canary, Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, CreatedAt: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	// The first SMS attempt fails transiently: the retry path logs too. (The
	// runner's fault injection fails one Publish call as the worker sees it;
	// a sink fault would be absorbed by the SNS client's own retry.)
	if err := st.Faults.Set(domain.ChannelSMS, devstack.FaultTransient, 1); err != nil {
		t.Fatal(err)
	}

	alert := stacktest.Notify(t, map[string]any{
		"type": "security.login_alert", "recipient": map[string]any{"userId": user, "email": email, "phone": phone},
		"data": map[string]any{"url": link},
	})
	comment := stacktest.Notify(t, map[string]any{
		"type": "comment.created", "recipient": map[string]any{"userId": user},
		"data": map[string]any{"actorLabel": text, "url": link},
	})

	sent := func(d domain.Delivery) bool { return d.Status == domain.StatusSent }
	delivery(t, alert, domain.ChannelEmail, "the alert's email sent", sent)
	if d := delivery(t, alert, domain.ChannelSMS, "the alert's SMS sent after a retry", sent); d.Attempts != 2 {
		t.Errorf("SMS attempts %d, want 2 (one injected failure)", d.Attempts)
	}
	delivery(t, comment, domain.ChannelPush, "the comment's push sent", sent)
	if len(stacktest.EmailsTo(t, email)) != 1 || len(st.Push.MessagesFor(subID)) != 1 {
		t.Fatalf("deliveries did not reach the sinks")
	}
	smsSeen := false
	for _, m := range st.SMS.Messages() {
		smsSeen = smsSeen || m.To == phone
	}
	if !smsSeen {
		t.Fatal("the SMS did not reach the sink")
	}

	out := logs.String()
	if !strings.Contains(out, alert) || !strings.Contains(out, comment) {
		t.Fatalf("the logs do not mention the notifications at all: is the capture working? (%d bytes)", len(out))
	}
	secrets := map[string]string{
		"email address":          email,
		"email local part":       "Canary.Mailbox." + canary,
		"phone number":           phone,
		"phone digits":           strings.TrimPrefix(phone, "+"),
		"personal text":          text,
		"link in the data":       "canary-" + canary,
		"push endpoint":          sub.Endpoint,
		"push subscription key":  sub.P256dh,
		"push subscription auth": sub.Auth,
	}
	for what, secret := range secrets {
		if i := strings.Index(strings.ToLower(out), strings.ToLower(secret)); i >= 0 {
			t.Errorf("the logs contain the %s: …%s…", what, excerpt(out, i, len(secret)))
		}
	}
	// Any address or E.164 number at all, whoever it belongs to.
	for what, re := range map[string]*regexp.Regexp{
		"an email address": regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`),
		"a phone number":   regexp.MustCompile(`\+[1-9][0-9]{7,14}`),
	} {
		if loc := re.FindStringIndex(out); loc != nil {
			t.Errorf("the logs contain %s: …%s…", what, excerpt(out, loc[0], loc[1]-loc[0]))
		}
	}
}

func excerpt(s string, i, n int) string {
	return s[max(0, i-120):min(len(s), i+n+60)]
}
