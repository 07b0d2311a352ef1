package iamcheck

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/iam"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

func denied(st interface{ Denials() []iam.Call }, function, action string) bool {
	return slices.ContainsFunc(st.Denials(), func(c iam.Call) bool { return c.Function == function && c.Action == action })
}

func notifyEmail(t *testing.T) string {
	t.Helper()
	user := stacktest.UniqueID("u")
	addr := user + "@example.com"
	stacktest.Notify(t, `{"type":"invoice.payment_failed","recipient":{"userId":"`+user+`","email":"`+addr+`"},"data":{"invoiceUrl":"https://example.com/i/9"}}`)
	return addr
}

// TestRunFailsWithoutAPermission runs notifications through the stack whose
// template lacks the high-priority relay's dynamodb:BatchGetItem and the email function's
// ses:SendEmail: the relay's stream batch fails with AccessDeniedException
// naming the action, and no email goes out. With BatchGetItem given back
// (policies from a template lacking only ses:SendEmail) the relay plans the
// delivery and the email function is refused ses:SendEmail.
func TestRunFailsWithoutAPermission(t *testing.T) {
	st := stacktest.Stack(t)

	addr := notifyEmail(t)
	stacktest.Eventually(t, 20*time.Second, "the relay denied dynamodb:BatchGetItem", func() bool {
		return denied(st.IAM, "RelayHighFunction", "dynamodb:BatchGetItem")
	})
	stacktest.Eventually(t, 5*time.Second, "the relay's failure in its log", func() bool {
		return strings.Contains(logs.String(), "api error AccessDeniedException: User: arn:aws:sts::000000000000:assumed-role/herald-RelayHighFunctionRole/RelayHighFunction is not authorized to perform: dynamodb:BatchGetItem on resource: arn:aws:dynamodb:us-east-1:000000000000:table/herald-Table")
	})
	if n := len(stacktest.EmailsTo(t, addr)); n != 0 {
		t.Errorf("%d emails sent although the relay could not plan the delivery", n)
	}

	p, err := st.LoadPolicies(context.Background(), noSendEmail)
	if err != nil {
		t.Fatal(err)
	}
	st.IAM.SetPolicies(p)
	addr = notifyEmail(t)
	stacktest.Eventually(t, 20*time.Second, "the email function denied ses:SendEmail", func() bool {
		return denied(st.IAM, "EmailFunction", "ses:SendEmail")
	})
	stacktest.Eventually(t, 5*time.Second, "the email function's failure in its log", func() bool {
		return strings.Contains(logs.String(), "RelayHighFunction is not authorized") &&
			strings.Contains(logs.String(), "assumed-role/herald-EmailFunctionRole/EmailFunction is not authorized to perform: ses:SendEmail on resource: arn:aws:ses:us-east-1:000000000000:identity/example.com")
	})
	time.Sleep(500 * time.Millisecond)
	if n := len(stacktest.EmailsTo(t, addr)); n != 0 {
		t.Errorf("%d emails sent although the email function may not call ses:SendEmail", n)
	}
}
