package attack

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/ops"
)

// canary makes this run's personal data recognisable in the log scan.
var canary = fmt.Sprintf("%06d", time.Now().UnixNano()%1_000_000)

// used collects every piece of personal data the run sends; the log scan
// looks for each.
var used = struct {
	sync.Mutex
	values map[string]string // value → what it is
}{values: map[string]string{}}

func use(what, value string) string {
	used.Lock()
	defer used.Unlock()
	used.values[value] = what
	return value
}

func email(tag string) string { return use("email address", "Canary."+tag+"."+canary+"@example.org") }

func invoice(user, addr, key string) map[string]any {
	return map[string]any{"type": "invoice.payment_failed", "channels": []string{"email"},
		"recipient": map[string]any{"userId": user, "email": addr},
		"data":      map[string]any{"invoiceUrl": use("data value", "https://example.com/invoice-"+canary+"/"+key)}}
}

// 300 concurrent requests with one Idempotency-Key: one notification, one
// email; the same key with another payload is refused.
func TestIdempotencyStorm(t *testing.T) {
	user := stacktest.UniqueID("storm")
	addr := email("storm")
	key := "storm-" + canary
	body, _ := json.Marshal(invoice(user, addr, key))
	other, _ := json.Marshal(invoice(user, addr, key+"-other"))
	const n, workers = 300, 30
	var ids sync.Map
	var replayed, reused, bad atomic.Int32
	jobs := make(chan []byte)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for b := range jobs {
				status, raw, h := request(t, http.MethodPost, "/v1/notifications", b, http.Header{
					"Content-Type": {"application/json"}, "Idempotency-Key": {key}})
				// A loaded machine can run an invocation out of time: the
				// API answers 503 timeout, and a caller retries with the key.
				for retries := 0; status == http.StatusServiceUnavailable && outcome(raw) == "timeout" && retries < 5; retries++ {
					time.Sleep(200 * time.Millisecond)
					status, raw, h = request(t, http.MethodPost, "/v1/notifications", b, http.Header{
						"Content-Type": {"application/json"}, "Idempotency-Key": {key}})
				}
				switch {
				case status == http.StatusAccepted:
					var a struct{ ID string }
					_ = json.Unmarshal(raw, &a)
					ids.Store(a.ID, true)
					if h.Get("Idempotent-Replayed") == "true" {
						replayed.Add(1)
					}
				case status == http.StatusUnprocessableEntity && outcome(raw) == "idempotency_key_reused":
					reused.Add(1)
				default:
					bad.Add(1)
					t.Errorf("storm: %d %s", status, raw)
				}
			}
		})
	}
	for i := range n + 20 {
		if i%16 == 15 { // 20 interleaved requests with another payload
			jobs <- other
		} else {
			jobs <- body
		}
	}
	close(jobs)
	wg.Wait()
	var id string
	count := 0
	ids.Range(func(k, _ any) bool { id, count = k.(string), count+1; return true })
	// Exactly one request created the notification. Usually one of the n
	// with body; under load one of the 20 others can win the race, and then
	// the n are the reused ones.
	created := n + 20 - replayed.Load() - reused.Load() - bad.Load()
	if count != 1 || created != 1 || (reused.Load() != 20 && reused.Load() != n) || bad.Load() != 0 {
		t.Fatalf("%d ids, %d created (want 1), %d replayed, %d reused (want 20, or %d when another payload won), %d bad",
			count, created, replayed.Load(), reused.Load(), n, bad.Load())
	}
	waitDelivery(t, id, domain.ChannelEmail, "the storm's one email", status(domain.StatusSent))
	time.Sleep(2 * time.Second) // a duplicate send would show by now
	if got := len(stacktest.EmailsTo(t, addr)); got != 1 {
		t.Fatalf("%d emails, want exactly 1", got)
	}
}

// Transient provider faults until retries run out: the deliveries end
// failed: exhausted with their messages in the DLQ; with the faults off,
// `herald dlq redrive` sends each exactly once.
func TestFaultsThenDLQThenRedriveSendsOnce(t *testing.T) {
	st := stacktest.Stack(t)
	if err := st.Faults.Set(domain.ChannelEmail, devstack.FaultTransient, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Faults.Set(domain.ChannelEmail, devstack.FaultOff, 0) })
	var ids, addrs []string
	for i := range 3 {
		addr := email(fmt.Sprintf("dlq%d", i))
		addrs = append(addrs, addr)
		ids = append(ids, stacktest.Notify(t, invoice(stacktest.UniqueID("dlq"), addr, fmt.Sprintf("dlq-%d", i))))
	}
	for _, id := range ids {
		d := waitDelivery(t, id, domain.ChannelEmail, "retries exhausted", status(domain.StatusFailed))
		if d.Reason != domain.ReasonExhausted || d.Attempts != 3 {
			t.Fatalf("delivery %+v, want failed: exhausted after 3 attempts", d)
		}
	}
	stacktest.Eventually(t, settle, "the three messages in the email DLQ", func() bool {
		found := 0
		for _, b := range dlqBodies(t, "EmailDLQ") {
			for _, id := range ids {
				if strings.Contains(b, id) {
					found++
				}
			}
		}
		return found >= 3
	})
	if err := st.Faults.Set(domain.ChannelEmail, devstack.FaultOff, 0); err != nil {
		t.Fatal(err)
	}
	args := []string{"redrive", "email"}
	for _, id := range ids {
		args = append(args, "--id", id)
	}
	path, err := ops.WriteState(t.TempDir(), st.LocalState())
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if err := (ops.CLI{Stdout: &out, Stderr: &errOut, Connect: ops.DefaultConnect}).Run(context.Background(), append(args, "--state", path)); err != nil {
		t.Fatalf("herald dlq %v: %v\n%s%s", args, err, errOut.String(), out.String())
	}
	for i, id := range ids {
		waitDelivery(t, id, domain.ChannelEmail, "sent after the redrive", status(domain.StatusSent))
		if got := len(stacktest.EmailsTo(t, addrs[i])); got != 1 {
			t.Fatalf("%s: %d emails, want exactly 1", id, got)
		}
	}
	for _, b := range dlqBodies(t, "EmailDLQ") {
		for _, id := range ids {
			if strings.Contains(b, id) {
				t.Fatalf("%s still in the DLQ", id)
			}
		}
	}
}

// hostile is one request of the corpus and the refusal it must get.
type hostile struct {
	name, method, path string
	body               string
	header             http.Header
	token              string // user: a token for this subject
	status             int
	outcome            string // problem code, or "gateway: <message>"
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

func hostileCorpus(t *testing.T) []hostile {
	victim := stacktest.UniqueID("victim")
	attacker := stacktest.UniqueID("attacker")
	sub := func(endpoint string) string {
		return `{"endpoint":"` + endpoint + `","keys":{"p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM","auth":"tBHItJI5svbpez7KI4CCXg"}}`
	}
	good := `{"type":"invoice.payment_failed","recipient":{"userId":"` + victim + `","email":"` + email("hostile") + `"},"data":{"invoiceUrl":"https://example.com/i/9"}}`
	nid := "n" + strings.Repeat("0", 26)
	// The victim's device, registered before the corpus: the attacker's
	// requests name its id. Its token is in the log scan.
	victimToken := use("device token", canary+strings.Repeat("0a", 29))
	regStatus, regRaw, _ := request(t, http.MethodPost, "/v1/users/"+victim+"/devices", []byte(`{"platform":"apns","token":"`+victimToken+`"}`), jsonHeader())
	var victimDevice struct{ DeviceID string }
	if err := json.Unmarshal(regRaw, &victimDevice); regStatus != http.StatusCreated || err != nil || victimDevice.DeviceID == "" {
		t.Fatalf("register the victim's device: %d %s", regStatus, regRaw)
	}
	device := func(platform, token string) string { return `{"platform":"` + platform + `","token":"` + token + `"}` }
	gz := http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}
	text := http.Header{"Content-Type": {"text/plain"}}
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	unsub := "/v1/unsubscribe?token=" + strings.Repeat("A", 40)
	return []hostile{
		// POST /v1/notifications
		{name: "notification as text/plain", method: "POST", path: "/v1/notifications", body: good, header: text, status: 415, outcome: "unsupported_media_type"},
		{name: "notification gzip-encoded", method: "POST", path: "/v1/notifications", body: good, header: gz, status: 415, outcome: "unsupported_media_type"},
		{name: "notification as a form", method: "POST", path: "/v1/notifications", body: "type=otp.code", header: form, status: 415, outcome: "unsupported_media_type"},
		{name: "notification truncated JSON", method: "POST", path: "/v1/notifications", body: `{"type":`, header: jsonHeader(), status: 400, outcome: "invalid_json"},
		{name: "notification prototype pollution key", method: "POST", path: "/v1/notifications", body: `{"__proto__":{"admin":true}}`, header: jsonHeader(), status: 400, outcome: "unknown_field"},
		{name: "notification channels null", method: "POST", path: "/v1/notifications", body: strings.Replace(good, `"data"`, `"channels":null,"data"`, 1), header: jsonHeader(), status: 400, outcome: "invalid_type"},
		{name: "notification data URL with user info", method: "POST", path: "/v1/notifications", body: strings.Replace(good, "https://example.com/i/9", "https://evil.com@example.com/", 1), header: jsonHeader(), status: 422, outcome: "invalid_variable"},
		{name: "notification javascript: URL", method: "POST", path: "/v1/notifications", body: strings.Replace(good, "https://example.com/i/9", "javascript:alert(1)", 1), header: jsonHeader(), status: 422, outcome: "invalid_variable"},
		{name: "notification email as user id", method: "POST", path: "/v1/notifications", body: strings.Replace(good, victim, use("email address", "carol."+canary+"@corp.example"), 1), header: jsonHeader(), status: 400, outcome: "invalid_user_id"},
		{name: "notification header injection in email", method: "POST", path: "/v1/notifications", body: strings.Replace(good, `"email":"`, `"email":"x@example.com\r\nBcc: y@example.com","e":"`, 1), header: jsonHeader(), status: 400, outcome: "unknown_field"},
		{name: "notification body over 64 KiB", method: "POST", path: "/v1/notifications", body: strings.Replace(good, `"data"`, `"batchKey":"`+strings.Repeat("a", 70<<10)+`","data"`, 1), header: jsonHeader(), status: 413, outcome: "body_too_large"},
		{name: "notification idempotency key with control character", method: "POST", path: "/v1/notifications", body: good, header: http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"a\tb"}}, status: 400, outcome: "invalid_idempotency_key"},
		{name: "notification PATCH", method: "PATCH", path: "/v1/notifications", body: good, header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		{name: "notification PUT", method: "PUT", path: "/v1/notifications", body: good, header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		// POST /v1/notifications/batch
		{name: "batch of 101", method: "POST", path: "/v1/notifications/batch", body: `{"notifications":[` + strings.Repeat(`{},`, 100) + `{}]}`, header: jsonHeader(), status: 400, outcome: "batch_too_large"},
		{name: "batch as text", method: "POST", path: "/v1/notifications/batch", body: `{"notifications":[]}`, header: text, status: 415, outcome: "unsupported_media_type"},
		// GET/DELETE /v1/notifications/{id}
		{name: "get another caller's or no notification", method: "GET", path: "/v1/notifications/" + nid, status: 404, outcome: "notification_not_found"},
		{name: "get with SQL in the id", method: "GET", path: "/v1/notifications/n%27%20OR%201%3D1--", status: 404, outcome: "notification_not_found"},
		{name: "cancel unknown", method: "DELETE", path: "/v1/notifications/" + nid, status: 404, outcome: "notification_not_found"},
		{name: "cancel with a body encoded", method: "DELETE", path: "/v1/notifications/" + nid, body: "x", header: gz, status: 415, outcome: "unsupported_media_type"},
		// campaigns
		{name: "campaign of an unknown type", method: "POST", path: "/v1/campaigns", body: `{"type":"no.such.type","audience":{"userIds":["` + victim + `"]}}`, header: jsonHeader(), status: 422, outcome: "unknown_type"},
		{name: "campaign of 1,001 inline users", method: "POST", path: "/v1/campaigns", body: `{"type":"invoice.payment_failed","data":{"invoiceUrl":"https://example.com/i/9"},"audience":{"userIds":["u"` + strings.Repeat(`,"u"`, 1000) + `]}}`, header: jsonHeader(), status: 422, outcome: "audience_too_large"},
		{name: "campaign as text", method: "POST", path: "/v1/campaigns", body: `{"type":"otp.code"}`, header: text, status: 415, outcome: "unsupported_media_type"},
		{name: "get another caller's or no campaign", method: "GET", path: "/v1/campaigns/c" + strings.Repeat("0", 26), status: 404, outcome: "campaign_not_found"},
		{name: "cancel no campaign", method: "DELETE", path: "/v1/campaigns/c" + strings.Repeat("0", 26), status: 404, outcome: "campaign_not_found"},
		{name: "recipients of no campaign", method: "POST", path: "/v1/campaigns/c" + strings.Repeat("0", 26) + "/recipients", body: `{"chunk":0,"userIds":["` + victim + `"]}`, header: jsonHeader(), status: 404, outcome: "campaign_not_found"},
		{name: "recipients, negative chunk", method: "POST", path: "/v1/campaigns/c" + strings.Repeat("0", 26) + "/recipients", body: `{"chunk":-1,"userIds":["` + victim + `"]}`, header: jsonHeader(), status: 400, outcome: "invalid_chunk"},
		{name: "start no campaign", method: "POST", path: "/v1/campaigns/c%27%20OR%201%3D1--/start", status: 404, outcome: "campaign_not_found"},
		{name: "campaign channels null", method: "POST", path: "/v1/campaigns", body: `{"type":"invoice.payment_failed","channels":null,"data":{"invoiceUrl":"https://example.com/i/9"}}`, header: jsonHeader(), status: 400, outcome: "invalid_type"},
		{name: "campaign data URL with user info", method: "POST", path: "/v1/campaigns", body: `{"type":"invoice.payment_failed","data":{"invoiceUrl":"https://evil.com@example.com/"}}`, header: jsonHeader(), status: 422, outcome: "invalid_variable"},
		{name: "campaign email as inline user id", method: "POST", path: "/v1/campaigns", body: `{"type":"invoice.payment_failed","data":{"invoiceUrl":"https://example.com/i/9"},"audience":{"userIds":["` + victim + `","` + use("email address", "gina."+canary+"@corp.example") + `"]}}`, header: jsonHeader(), status: 400, outcome: "invalid_user_id"},
		{name: "campaign inline user ids null", method: "POST", path: "/v1/campaigns", body: `{"type":"invoice.payment_failed","data":{"invoiceUrl":"https://example.com/i/9"},"audience":{"userIds":null}}`, header: jsonHeader(), status: 400, outcome: "invalid_type"},
		{name: "campaign gzip-encoded", method: "POST", path: "/v1/campaigns", body: `{"type":"otp.code"}`, header: gz, status: 415, outcome: "unsupported_media_type"},
		{name: "recipients email as user id", method: "POST", path: "/v1/campaigns/c" + strings.Repeat("0", 26) + "/recipients", body: `{"chunk":0,"userIds":["` + use("email address", "hank."+canary+"@corp.example") + `"]}`, header: jsonHeader(), status: 400, outcome: "invalid_user_id"},
		{name: "recipients user ids null", method: "POST", path: "/v1/campaigns/c" + strings.Repeat("0", 26) + "/recipients", body: `{"chunk":0,"userIds":null}`, header: jsonHeader(), status: 400, outcome: "invalid_type"},
		{name: "recipients as a form", method: "POST", path: "/v1/campaigns/c" + strings.Repeat("0", 26) + "/recipients", body: "chunk=0", header: form, status: 415, outcome: "unsupported_media_type"},
		{name: "start with an encoded body", method: "POST", path: "/v1/campaigns/c" + strings.Repeat("0", 26) + "/start", body: "x", header: gz, status: 415, outcome: "unsupported_media_type"},
		// users
		{name: "put user email as id", method: "PUT", path: "/v1/users/" + use("email address", "dave."+canary+"@corp.example"), body: `{}`, header: jsonHeader(), status: 400, outcome: "invalid_user_id"},
		{name: "put user bad phone", method: "PUT", path: "/v1/users/" + victim, body: `{"phone":"` + use("phone number", "+1555"+canary+"9") + `x"}`, header: jsonHeader(), status: 400, outcome: "invalid_phone"},
		{name: "put user timezone traversal", method: "PUT", path: "/v1/users/" + victim, body: `{"timezone":"../../etc/passwd"}`, header: jsonHeader(), status: 400, outcome: "invalid_timezone"},
		{name: "put user as text", method: "PUT", path: "/v1/users/" + victim, body: `{}`, header: text, status: 415, outcome: "unsupported_media_type"},
		{name: "get unknown user", method: "GET", path: "/v1/users/" + attacker, status: 404, outcome: "user_not_found"},
		{name: "delete user (no such route)", method: "DELETE", path: "/v1/users/" + victim, status: 404, outcome: "gateway: Not Found"},
		// push subscriptions: server-side request forgery
		{name: "subscription metadata service", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://169.254.169.254/latest/meta-data/"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription private address", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://10.0.0.1/"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription IPv6 loopback", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://[::1]/"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription decimal IP", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://2852039166/"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription hex IP", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://0xA9FEA9FE/"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription loopback ssh", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://127.0.0.1:22/"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription localhost", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://localhost:3400/x"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription IPv4-mapped", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://[::ffff:127.0.0.1]/"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription any other host", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://attacker.example/collect"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription user info", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("https://fcm.googleapis.com@10.0.0.1/"), header: jsonHeader(), status: 400, outcome: "invalid_endpoint"},
		{name: "subscription to the runner's fault route", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub(stacktest.Stack(t).APIURL + "/_dev/faults"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription to the runner's scheduler route", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub(stacktest.Stack(t).APIURL + "/_dev/scheduler/run"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription out of the push service's path", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub(stacktest.Stack(t).APIURL + "/_dev/push/endpoints/../../faults"), header: jsonHeader(), status: 422, outcome: "endpoint_not_allowed"},
		{name: "subscription plain http", method: "POST", path: "/v1/users/" + victim + "/push-subscriptions", body: sub("http://fcm.googleapis.com/x"), header: jsonHeader(), status: 400, outcome: "invalid_endpoint"},
		{name: "delete subscription bad id", method: "DELETE", path: "/v1/users/" + victim + "/push-subscriptions/%3Cscript%3E", status: 404, outcome: "subscription_not_found"},
		// devices (native mobile push)
		{name: "device of an unknown platform", method: "POST", path: "/v1/users/" + attacker + "/devices", body: device("windows", "abc"), header: jsonHeader(), status: 400, outcome: "invalid_platform"},
		{name: "device platform in capitals", method: "POST", path: "/v1/users/" + attacker + "/devices", body: device("APNS", strings.Repeat("0a", 32)), header: jsonHeader(), status: 400, outcome: "invalid_platform"},
		{name: "device platform as SNS names it", method: "POST", path: "/v1/users/" + attacker + "/devices", body: device("GCM", "abc"), header: jsonHeader(), status: 400, outcome: "invalid_platform"},
		{name: "device huge FCM token", method: "POST", path: "/v1/users/" + attacker + "/devices", body: device("fcm", strings.Repeat("x", 60<<10)), header: jsonHeader(), status: 400, outcome: "invalid_token"},
		{name: "device token over 64 KiB", method: "POST", path: "/v1/users/" + attacker + "/devices", body: device("fcm", strings.Repeat("x", 70<<10)), header: jsonHeader(), status: 413, outcome: "body_too_large"},
		{name: "device APNs token not hex", method: "POST", path: "/v1/users/" + attacker + "/devices", body: device("apns", strings.Repeat("zz", 32)), header: jsonHeader(), status: 400, outcome: "invalid_token"},
		{name: "device APNs token too long", method: "POST", path: "/v1/users/" + attacker + "/devices", body: device("apns_sandbox", strings.Repeat("0a", 33)), header: jsonHeader(), status: 400, outcome: "invalid_token"},
		{name: "device token with a newline", method: "POST", path: "/v1/users/" + attacker + "/devices", body: device("fcm", `abc\ndef`), header: jsonHeader(), status: 400, outcome: "invalid_token"},
		{name: "device token not a string", method: "POST", path: "/v1/users/" + attacker + "/devices", body: `{"platform":"fcm","token":{"$ne":null}}`, header: jsonHeader(), status: 400, outcome: "invalid_type"},
		{name: "device with the endpoint ARN given", method: "POST", path: "/v1/users/" + attacker + "/devices", body: `{"platform":"fcm","token":"abc","endpointArn":"arn:aws:sns:us-east-1:000000000000:endpoint/GCM/x/y"}`, header: jsonHeader(), status: 400, outcome: "unknown_field"},
		{name: "device app label traversal", method: "POST", path: "/v1/users/" + attacker + "/devices", body: `{"platform":"fcm","token":"abc","app":"../../x"}`, header: jsonHeader(), status: 400, outcome: "invalid_app"},
		{name: "device as text", method: "POST", path: "/v1/users/" + attacker + "/devices", body: device("fcm", "abc"), header: text, status: 415, outcome: "unsupported_media_type"},
		{name: "device of an email-shaped user", method: "POST", path: "/v1/users/" + use("email address", "jack."+canary+"@corp.example") + "/devices", body: device("fcm", "abc"), header: jsonHeader(), status: 400, outcome: "invalid_user_id"},
		{name: "devices of an email-shaped user", method: "GET", path: "/v1/users/" + use("email address", "jill."+canary+"@corp.example") + "/devices", status: 400, outcome: "invalid_user_id"},
		{name: "delete another user's device", method: "DELETE", path: "/v1/users/" + attacker + "/devices/" + victimDevice.DeviceID, status: 404, outcome: "device_not_found"},
		{name: "delete device bad id", method: "DELETE", path: "/v1/users/" + victim + "/devices/%3Cscript%3E", status: 404, outcome: "device_not_found"},
		{name: "delete device SQL in the id", method: "DELETE", path: "/v1/users/" + victim + "/devices/d%27%20OR%201%3D1--", status: 404, outcome: "device_not_found"},
		{name: "device PUT", method: "PUT", path: "/v1/users/" + victim + "/devices", body: device("fcm", "abc"), header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		// preferences
		{name: "preferences unknown type", method: "PUT", path: "/v1/users/" + victim + "/preferences", body: `{"preferences":{"nope.nope":{"email":false}}}`, header: jsonHeader(), status: 422, outcome: "unknown_type"},
		{name: "preferences of an email-shaped user", method: "GET", path: "/v1/users/" + use("email address", "erin."+canary+"@corp.example") + "/preferences", status: 400, outcome: "invalid_user_id"},
		// announcements
		{name: "announcement as text", method: "POST", path: "/v1/announcements", body: `{"title":"x","body":"y"}`, header: text, status: 415, outcome: "unsupported_media_type"},
		{name: "announcement unknown field", method: "POST", path: "/v1/announcements", body: `{"title":"x","body":"y","html":"<script>"}`, header: jsonHeader(), status: 400, outcome: "unknown_field"},
		{name: "announcement duplicate key", method: "POST", path: "/v1/announcements", body: `{"title":"x","title":"y","body":"z","expiresAt":"2099-01-01T00:00:00Z"}`, header: jsonHeader(), status: 400, outcome: "duplicate_field"},
		{name: "announcement wrong-case key", method: "POST", path: "/v1/announcements", body: `{"Title":"x","body":"z","expiresAt":"2099-01-01T00:00:00Z"}`, header: jsonHeader(), status: 400, outcome: "unknown_field"},
		{name: "announcement invalid UTF-8", method: "POST", path: "/v1/announcements", body: "{\"title\":\"bad\xff\",\"body\":\"z\",\"expiresAt\":\"2099-01-01T00:00:00Z\"}", header: jsonHeader(), status: 400, outcome: "invalid_json"},
		{name: "announcement url breaking out of an attribute", method: "POST", path: "/v1/announcements", body: `{"title":"x","body":"z","url":"https://example.com/\"><img src=x onerror=alert(1)>","expiresAt":"2099-01-01T00:00:00Z"}`, header: jsonHeader(), status: 400, outcome: "invalid_url"},
		{name: "announcement bidi override", method: "POST", path: "/v1/announcements", body: `{"title":"invoice \u202efdp.exe","body":"z","expiresAt":"2099-01-01T00:00:00Z"}`, header: jsonHeader(), status: 400, outcome: "invalid_string"},
		{name: "announcements, forged cursor", method: "GET", path: "/v1/announcements?cursor=eyJwayI6IlUjYWRtaW4ifQ", status: 400, outcome: "invalid_cursor"},
		{name: "announcements, limit 0", method: "GET", path: "/v1/announcements?limit=0", status: 400, outcome: "invalid_limit"},
		{name: "announcement DELETE", method: "DELETE", path: "/v1/announcements", status: 404, outcome: "gateway: Not Found"},
		// inbox (JWT)
		{name: "inbox without a token", method: "GET", path: "/v1/users/" + victim + "/inbox", status: 401, outcome: "gateway: Unauthorized"},
		{name: "inbox of another user", method: "GET", path: "/v1/users/" + victim + "/inbox", token: attacker, status: 404, outcome: "not_found"},
		{name: "unread count of another user", method: "GET", path: "/v1/users/" + victim + "/inbox/unread-count", token: attacker, status: 404, outcome: "not_found"},
		{name: "mark another user's item read", method: "POST", path: "/v1/users/" + victim + "/inbox/" + nid + "/read", token: attacker, status: 404, outcome: "not_found"},
		{name: "read-all of another user", method: "POST", path: "/v1/users/" + victim + "/inbox/read-all", token: attacker, status: 404, outcome: "not_found"},
		{name: "archive another user's item", method: "POST", path: "/v1/users/" + victim + "/inbox/" + nid + "/archive", token: attacker, status: 404, outcome: "not_found"},
		{name: "presence without a token", method: "POST", path: "/v1/users/" + victim + "/presence", status: 401, outcome: "gateway: Unauthorized"},
		{name: "presence for another user", method: "POST", path: "/v1/users/" + victim + "/presence", token: attacker, status: 404, outcome: "not_found"},
		{name: "presence of an email-shaped subject", method: "POST", path: "/v1/users/" + use("email address", "ivy."+canary+"@corp.example") + "/presence", token: "ivy." + canary + "@corp.example", status: 400, outcome: "invalid_user_id"},
		{name: "inbox of an email-shaped subject", method: "GET", path: "/v1/users/ivy." + canary + "%40corp.example/inbox", token: "ivy." + canary + "@corp.example", status: 400, outcome: "invalid_user_id"},
		{name: "presence as text", method: "POST", path: "/v1/users/" + attacker + "/presence", body: "here", header: text, token: attacker, status: 415, outcome: "unsupported_media_type"},
		{name: "own inbox, bad cursor", method: "GET", path: "/v1/users/" + attacker + "/inbox?cursor=%00%01", token: attacker, status: 400, outcome: "invalid_cursor"},
		{name: "own inbox, huge limit", method: "GET", path: "/v1/users/" + attacker + "/inbox?limit=100000", token: attacker, status: 400, outcome: "invalid_limit"},
		{name: "inbox with a service caller's credentials only", method: "POST", path: "/v1/users/" + victim + "/inbox/read-all", header: http.Header{devstack.DevCallerHeader: {"svc"}}, status: 401, outcome: "gateway: Unauthorized"},
		{name: "service route with a user token (grants nothing)", method: "GET", path: "/v1/users/" + stacktest.UniqueID("nobody"), token: victim, status: 404, outcome: "user_not_found"},
		// the user's own preference center (JWT; the user is the token's sub)
		{name: "my preferences without a token", method: "GET", path: "/v1/me/preferences", status: 401, outcome: "gateway: Unauthorized"},
		{name: "my preferences PUT without a token", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{}}`, header: jsonHeader(), status: 401, outcome: "gateway: Unauthorized"},
		{name: "my preferences with a service caller's credentials only", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{}}`, header: http.Header{"Content-Type": {"application/json"}, devstack.DevCallerHeader: {"svc"}}, status: 401, outcome: "gateway: Unauthorized"},
		{name: "my preferences with an expired token", method: "GET", path: "/v1/me/preferences", header: http.Header{"Authorization": {"Bearer " + stacktest.Stack(t).Token(victim, -time.Minute)}}, status: 401, outcome: "gateway: Unauthorized"},
		{name: "my preferences naming another user in the body", method: "PUT", path: "/v1/me/preferences", body: `{"userId":"` + victim + `","preferences":{"comment.created":{"push":false}}}`, header: jsonHeader(), token: attacker, status: 400, outcome: "unknown_field"},
		{name: "my preferences: mandatory type off", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{"security.login_alert":{"email":false}}}`, header: jsonHeader(), token: attacker, status: 422, outcome: "mandatory_type"},
		{name: "my preferences: mandatory off hidden after a valid change", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{"comment.created":{"push":false},"otp.code":{"sms":false}}}`, header: jsonHeader(), token: attacker, status: 422, outcome: "mandatory_type"},
		{name: "my preferences: unknown type", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{"__proto__":{"email":false}}}`, header: jsonHeader(), token: attacker, status: 422, outcome: "unknown_type"},
		{name: "my preferences: unknown channel", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{"comment.created":{"fax":false}}}`, header: jsonHeader(), token: attacker, status: 400, outcome: "invalid_channel"},
		{name: "my preferences: value not a boolean", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{"comment.created":{"push":{"$ne":null}}}}`, header: jsonHeader(), token: attacker, status: 400, outcome: "invalid_type"},
		// topics and a recipient's history
		{name: "subscribe to a topic outside the safe set", method: "PUT", path: "/v1/topics/thread%E2%80%AE42/subscribers", body: `{"userIds":["` + victim + `"]}`, header: jsonHeader(), status: 400, outcome: "invalid_topic"},
		{name: "subscribe user ids null", method: "PUT", path: "/v1/topics/thread:42/subscribers", body: `{"userIds":null}`, header: jsonHeader(), status: 400, outcome: "invalid_type"},
		{name: "unsubscribe from a topic with a slash", method: "DELETE", path: "/v1/topics/a%2F..%2Fb/subscribers/" + victim, status: 400, outcome: "invalid_topic"},
		{name: "subscribers with a forged cursor", method: "GET", path: "/v1/topics/thread:42/subscribers?cursor=eyJwayI6IlUjeCJ9", status: 400, outcome: "invalid_cursor"},
		{name: "a user's topics, limit beyond 100", method: "GET", path: "/v1/users/" + victim + "/topics?limit=100000", status: 400, outcome: "invalid_limit"},
		{name: "mute a topic the user does not follow", method: "PUT", path: "/v1/users/" + victim + "/topics/thread:none", body: `{"muted":true}`, header: jsonHeader(), status: 404, outcome: "not_subscribed"},
		{name: "my topics without a token", method: "GET", path: "/v1/me/topics", status: 401, outcome: "gateway: Unauthorized"},
		{name: "mute my topic with a service caller's credentials only", method: "PUT", path: "/v1/me/topics/thread:42", body: `{"muted":true}`, header: http.Header{"Content-Type": {"application/json"}, devstack.DevCallerHeader: {"svc"}}, status: 401, outcome: "gateway: Unauthorized"},
		{name: "mute my topic without muted", method: "PUT", path: "/v1/me/topics/thread:42", body: `{}`, header: jsonHeader(), token: attacker, status: 400, outcome: "missing_field"},
		{name: "a user's history on an unknown channel", method: "GET", path: "/v1/users/" + victim + "/notifications?channel=fax", status: 400, outcome: "invalid_channel"},
		{name: "my preferences: duplicate key", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{},"preferences":{"comment.created":{"push":false}}}`, header: jsonHeader(), token: attacker, status: 400, outcome: "duplicate_field"},
		{name: "my preferences: profile fields are not writable here", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{},"quietHours":{"start":"00:00","end":"23:59"}}`, header: jsonHeader(), token: attacker, status: 400, outcome: "unknown_field"},
		{name: "my preferences as text", method: "PUT", path: "/v1/me/preferences", body: "preferences", header: text, token: attacker, status: 415, outcome: "unsupported_media_type"},
		{name: "my preferences over 64 KiB", method: "PUT", path: "/v1/me/preferences", body: `{"preferences":{"` + strings.Repeat("x", 70<<10) + `":{}}}`, header: jsonHeader(), token: attacker, status: 413, outcome: "body_too_large"},
		{name: "my preferences of an email-shaped subject", method: "GET", path: "/v1/me/preferences", token: "ivy." + canary + "@corp.example", status: 403, outcome: "invalid_subject"},
		{name: "push config without a token", method: "GET", path: "/v1/push/config", status: 401, outcome: "gateway: Unauthorized"},
		{name: "push config with an encoded body", method: "GET", path: "/v1/push/config", body: "x", header: gz, token: victim, status: 415, outcome: "unsupported_media_type"},
		{name: "push config with an expired token", method: "GET", path: "/v1/push/config", header: http.Header{"Authorization": {"Bearer " + stacktest.Stack(t).Token(victim, -time.Minute)}}, status: 401, outcome: "gateway: Unauthorized"},
		// one-click unsubscribe
		{name: "unsubscribe GET with a forged token", method: "GET", path: unsub, status: 400, outcome: "unsubscribe_token_invalid"},
		{name: "unsubscribe POST without the one-click body", method: "POST", path: unsub, status: 400, outcome: "one_click_required"},
		{name: "unsubscribe POST as JSON", method: "POST", path: unsub, body: `{"List-Unsubscribe":"One-Click"}`, header: jsonHeader(), status: 415, outcome: "unsupported_media_type"},
		{name: "unsubscribe POST forged token", method: "POST", path: unsub, body: "List-Unsubscribe=One-Click", header: form, status: 400, outcome: "unsubscribe_token_invalid"},
		{name: "unsubscribe DELETE", method: "DELETE", path: unsub, status: 404, outcome: "gateway: Not Found"},
		// no route
		{name: "unknown path", method: "GET", path: "/v2/notifications", status: 404, outcome: "gateway: Not Found"},
		{name: "admin path", method: "GET", path: "/admin", status: 404, outcome: "gateway: Not Found"},
		{name: "dev route on the API path", method: "GET", path: "/v1/_dev/emails", status: 404, outcome: "gateway: Not Found"},
		{name: "TRACE", method: "TRACE", path: "/v1/notifications", status: 404, outcome: "gateway: Not Found"},
		// Routes match exactly, as on API Gateway: no trailing slash, empty
		// or dot segment is cleaned, nothing is redirected.
		{name: "trailing slash", method: "POST", path: "/v1/notifications/", body: good, header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		{name: "double slash", method: "POST", path: "/v1//notifications", body: good, header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		{name: "dot segment", method: "POST", path: "/v1/./notifications", body: good, header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		{name: "dot-dot segment", method: "POST", path: "/v1/campaigns/../notifications", body: good, header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		{name: "dot-dot to a runner route", method: "POST", path: "/v1/notifications/../../_dev/scheduler/run", body: `{}`, header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		{name: "empty user id", method: "GET", path: "/v1/users//preferences", status: 404, outcome: "gateway: Not Found"},
		{name: "user id ..", method: "POST", path: "/v1/users/../push-subscriptions", body: sub("https://fcm.googleapis.com/fcm/send/x"), header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		{name: "user id .. percent-encoded", method: "POST", path: "/v1/users/%2E%2E/push-subscriptions", body: sub("https://fcm.googleapis.com/fcm/send/x"), header: jsonHeader(), status: 404, outcome: "gateway: Not Found"},
		{name: "user id ...", method: "PUT", path: "/v1/users/...", body: `{}`, header: jsonHeader(), status: 400, outcome: "invalid_user_id"},
		{name: "recipient user id ..", method: "POST", path: "/v1/notifications", body: strings.Replace(good, `"userId":"`+victim+`"`, `"userId":".."`, 1), header: jsonHeader(), status: 400, outcome: "invalid_user_id"},
		{name: "over 10 MB", method: "POST", path: "/v1/notifications", body: strings.Repeat("x", 10<<20+1), header: jsonHeader(), status: 413, outcome: "gateway: Request Entity Too Large"},
	}
}

// The hostile-request corpus, across every route of the template: each gets
// its status and stable problem code (or API Gateway's own message), and
// none writes to the table or sends anything.
func TestHostileRequestsAcrossEveryRoute(t *testing.T) {
	st := stacktest.Stack(t)
	corpus := hostileCorpus(t)
	attacker := stacktest.UniqueID("attacker")
	covered := map[string]bool{}
	before, table := sent(t), tableDigest(t)
	for _, h := range corpus {
		t.Run(h.name, func(t *testing.T) {
			header := h.header.Clone()
			if header == nil {
				header = http.Header{}
			}
			if h.token != "" {
				header.Set("Authorization", "Bearer "+st.Token(h.token, time.Hour))
			}
			var body []byte
			if h.body != "" {
				body = []byte(h.body)
			}
			status, raw, _ := request(t, h.method, h.path, body, header)
			if status != h.status || outcome(raw) != h.outcome {
				t.Fatalf("%d %s, want %d %s", status, trim(raw), h.status, h.outcome)
			}
		})
		for _, r := range st.Template.Routes() {
			p := strings.SplitN(h.path, "?", 2)[0]
			if r.Method == h.method && routeMatches(r.Path, p) {
				covered[r.Key()] = true
			}
		}
	}
	for _, r := range st.Template.Routes() {
		if !covered[r.Key()] {
			t.Errorf("route %s has no hostile request in the corpus", r.Key())
		}
	}
	// Every method a path of the template does not serve is API Gateway's
	// 404, on routes added later too.
	methods := map[string]map[string]bool{}
	for _, r := range st.Template.Routes() {
		if methods[r.Path] == nil {
			methods[r.Path] = map[string]bool{}
		}
		methods[r.Path][r.Method] = true
	}
	unsupported := 0
	for path, served := range methods {
		concrete := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "x1")
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			if served[m] || slices.ContainsFunc(st.Template.Routes(), func(r devstack.Route) bool { return r.Method == m && routeMatches(r.Path, concrete) }) {
				continue // served, or another route's (GET /v1/notifications/{id} takes "batch")
			}
			unsupported++
			header := jsonHeader()
			header.Set(devstack.DevCallerHeader, "svc")
			header.Set("Authorization", "Bearer "+st.Token(attacker, time.Hour))
			if status, raw, _ := request(t, m, concrete, []byte(`{}`), header); status != 404 || string(raw) != `{"message":"Not Found"}` {
				t.Errorf("%s %s: %d %s, want API Gateway's 404", m, path, status, trim(raw))
			}
		}
	}
	t.Logf("%d hostile requests, %d unsupported methods on %d paths", len(corpus), unsupported, len(methods))
	if after := tableDigest(t); after != table {
		t.Errorf("the table changed during the corpus: %s → %s", table, after)
	}
	time.Sleep(time.Second)
	if after := sent(t); after != before {
		t.Fatalf("sinks went from %v to %v during the corpus", before, after)
	}
}

func routeMatches(pattern, path string) bool {
	ps, xs := strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(strings.Trim(path, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], "{") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}

func trim(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// forgedTokens are tokens for user that API Gateway's JWT authorizer
// refuses: forged signatures, algorithms and keys, and genuine signatures
// over claims it does not accept.
func forgedTokens(t *testing.T, user string) map[string]string {
	t.Helper()
	st := stacktest.Stack(t)
	// The issuer's published key, as an attacker would fetch it.
	var jwks struct {
		Keys []struct{ Kid, N, E string } `json:"keys"`
	}
	stacktest.Do(t, http.MethodGet, "/.well-known/jwks.json", nil).JSON(t, &jwks)
	var disc struct{ Issuer string }
	stacktest.Do(t, http.MethodGet, "/.well-known/openid-configuration", nil).JSON(t, &disc)
	if len(jwks.Keys) != 1 || disc.Issuer == "" {
		t.Fatalf("issuer %q, %d keys", disc.Issuer, len(jwks.Keys))
	}
	kid := jwks.Keys[0].Kid
	n, _ := base64.RawURLEncoding.DecodeString(jwks.Keys[0].N)
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: mustBytes(x509.MarshalPKIXPublicKey(pub))})
	own, _ := rsa.GenerateKey(rand.Reader, 2048)
	now := st.Clock.Now()
	claims := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"iss": disc.Issuer, "aud": "herald", "sub": user, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	forge := func(m jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(m, c)
		if kid != "" {
			tok.Header["kid"] = kid
		}
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return map[string]string{
		"alg none":                        forge(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, claims(nil)),
		"HS256 keyed with the public key": forge(jwt.SigningMethodHS256, pubPEM, kid, claims(nil)),
		"HS256 keyed with the modulus":    forge(jwt.SigningMethodHS256, n, kid, claims(nil)),
		"own key, issuer's kid":           forge(jwt.SigningMethodRS256, own, kid, claims(nil)),
		"own key, own kid":                forge(jwt.SigningMethodRS256, own, "attacker", claims(nil)),
		"expired":                         st.Token(user, -time.Minute),
		"wrong audience":                  st.SignToken(claims(func(c jwt.MapClaims) { c["aud"] = "another-app" })),
		"wrong issuer":                    st.SignToken(claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })),
		"no expiry":                       st.SignToken(claims(func(c jwt.MapClaims) { delete(c, "exp") })),
		"not yet valid":                   st.SignToken(claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() })),
		"payload swapped":                 swapPayload(st.Token("someone-else", time.Hour), claims(nil)),
	}
}

// Forged tokens on a user route: each is API Gateway's 401, nothing runs.
func TestTokenForgeryIsRefused(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("forge")
	path := "/v1/users/" + user + "/inbox"
	if status, raw, _ := request(t, http.MethodGet, path, nil, http.Header{"Authorization": {"Bearer " + st.Token(user, time.Hour)}}); status != 200 {
		t.Fatalf("a genuine token: %d %s", status, raw)
	}
	for name, tok := range forgedTokens(t, user) {
		t.Run(name, func(t *testing.T) {
			w := apiWrites(t)
			status, raw, _ := request(t, http.MethodGet, path, nil, http.Header{"Authorization": {"Bearer " + tok}})
			if status != 401 || string(raw) != `{"message":"Unauthorized"}` {
				t.Fatalf("%d %s, want API Gateway's 401", status, raw)
			}
			if apiWrites(t) != w {
				t.Fatal("the table was written")
			}
		})
	}
}

// swapPayload keeps a genuine header and signature but replaces the claims.
func swapPayload(token string, c jwt.MapClaims) string {
	parts := strings.Split(token, ".")
	raw, _ := json.Marshal(c)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(raw) + "." + parts[2]
}

func mustBytes(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// Poison work messages go to their DLQ after MaxReceiveCount receives, and
// send nothing. Each function makes a malformed message visible again at
// once, so the receives follow each other: the release queue keeps its
// template settings (visibility 360 s, maxReceiveCount 3), and a message left
// to its visibility timeout would take 12 minutes, far past settle.
func TestPoisonMessagesGoToTheDLQ(t *testing.T) {
	before := sent(t)
	tag := "poison-" + canary
	poison := map[string][]string{
		"SmsNormalQueue": {"not json " + tag, `{"notificationId":"` + tag + `-a","channel":"email"}`},
		"PushHighQueue":  {`{"notificationId":"` + tag + `-b","channel":"push","extra":1}`, `[` + `"` + tag + `-c"]`},
		"EmailLowQueue":  {`{"notificationId":"","channel":"email","poison":"` + tag + `-d"}`, `{"notificationId":"` + tag + `-e"` + strings.Repeat(" ", 1000) + `}`},
		// The campaign function's steps: not JSON, and a lot without its chunk.
		"CampaignQueue": {"not json " + tag + "-f", `{"kind":"lot","campaignId":"` + tag + `-g"}`},
		// The scheduler's release messages: not JSON, and a partition with
		// an unknown field.
		"ReleaseQueue": {"not json " + tag + "-h", `{"bucket":"2026-03-02T11:00:00Z","shard":1,"poison":"` + tag + `-i"}`},
	}
	dlqOf := map[string]string{"SmsNormalQueue": "SmsDLQ", "PushHighQueue": "PushDLQ", "EmailLowQueue": "EmailDLQ", "CampaignQueue": "CampaignDLQ", "ReleaseQueue": "ReleaseDLQ"}
	for q, bodies := range poison {
		stacktest.SendWork(t, q, bodies...)
	}
	for q, bodies := range poison {
		var in []string
		defer func() {
			if t.Failed() {
				t.Logf("%s holds %q", dlqOf[q], in)
			}
		}()
		stacktest.Eventually(t, settle, "poison in "+dlqOf[q], func() bool {
			in = dlqBodies(t, dlqOf[q])
			for _, b := range bodies {
				found := false
				for _, d := range in {
					found = found || d == b
				}
				if !found {
					return false
				}
			}
			return true
		})
	}
	if after := sent(t); after != before {
		t.Fatalf("sinks went from %v to %v", before, after)
	}
}

// A subscription that reached the table around the API (or before the
// allow-list) with an endpoint aimed at an internal listener: the push
// function never connects and deletes it.
func TestStoredSSRFEndpointIsNeverContacted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var connections atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	user := stacktest.UniqueID("ssrf")
	st := stacktest.Stack(t)
	_, genuine, err := st.Push.NewSubscription("")
	if err != nil {
		t.Fatal(err)
	}
	// The runner's own address outside its push service's endpoint path too
	// (stored before the allow-list named the path): refused before sending.
	for i, endpoint := range []string{"https://127.0.0.1:" + port + "/", "https://localhost:" + port + "/x", "http://127.0.0.1:" + port + "/",
		st.APIURL + "/_dev/faults", st.APIURL + "/_dev/scheduler/run"} {
		if err := stacktest.Store(t).AddPushSubscription(context.Background(), user, domain.PushSubscription{
			ID: fmt.Sprintf("ssrf-%d", i), Endpoint: endpoint, P256dh: genuine.P256dh, Auth: genuine.Auth, CreatedAt: time.Now(),
		}); err != nil {
			t.Fatal(err)
		}
	}
	id := stacktest.Notify(t, map[string]any{"type": "reservation.approved", "channels": []string{"push"},
		"recipient": map[string]any{"userId": user}, "data": map[string]any{"reservationUrl": "https://example.com/r/1"}})
	d := waitDelivery(t, id, domain.ChannelPush, "the push ends", func(d *domain.Delivery) bool { return d.Status.Terminal() })
	if d.Status != domain.StatusDropped || d.Reason != domain.ReasonNoContact {
		t.Fatalf("delivery %+v, want dropped: no_contact", d)
	}
	profile, err := stacktest.Store(t).GetRecipientProfile(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	if len(profile.PushSubscriptions) != 0 {
		t.Fatalf("subscriptions left: %+v", profile.PushSubscriptions)
	}
	if n := connections.Load(); n != 0 {
		t.Fatalf("the internal listener received %d connections", n)
	}
}

// A campaign to users whose profiles hold an address and a number, and a
// scheduled notification the scheduler releases, so that the log scan below
// covers the campaign function's fan-out and the scheduler's release with
// personal data in play.
func TestCampaignAndScheduledReleaseSend(t *testing.T) {
	st := stacktest.Stack(t)
	var users, addrs []string
	for i := range 3 {
		u := stacktest.UniqueID("cmp")
		addr := email(fmt.Sprintf("cmp%d", i))
		phone := use("phone number", fmt.Sprintf("+1555%s%d", canary, i))
		if r := stacktest.Do(t, http.MethodPut, "/v1/users/"+u, map[string]any{"email": addr, "phone": phone}); r.StatusCode/100 != 2 {
			t.Fatalf("put user: %d %s", r.StatusCode, r.Body)
		}
		users, addrs = append(users, u), append(addrs, addr)
	}
	// Normal priority: a campaign cannot take high (422 campaign_priority_high).
	r := stacktest.Do(t, http.MethodPost, "/v1/campaigns", map[string]any{"type": "invoice.payment_failed", "channels": []string{"email"}, "priority": "normal",
		"data": map[string]any{"invoiceUrl": use("data value", "https://example.com/campaign-"+canary)}, "audience": map[string]any{"userIds": users}})
	var c struct{ ID string }
	r.JSON(t, &c)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create campaign: %d %s", r.StatusCode, r.Body)
	}
	if r := stacktest.Do(t, http.MethodPost, "/v1/campaigns/"+c.ID+"/start", nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("start campaign: %d %s", r.StatusCode, r.Body)
	}
	// Scheduled an hour ahead; the clock then moves past it (last test to
	// use the stack: nothing after this depends on the time).
	sendAt := st.Clock.Now().Add(time.Hour).UTC().Truncate(time.Second)
	later := email("scheduled")
	body := invoice(stacktest.UniqueID("sched"), later, "scheduled")
	body["sendAt"] = sendAt.Format(time.RFC3339)
	id := stacktest.Notify(t, body)
	waitDelivery(t, id, domain.ChannelEmail, "the scheduled email deferred", func(d *domain.Delivery) bool { return d.Reason == domain.ReasonScheduled })
	st.Clock.Advance(time.Hour + time.Second)
	waitDelivery(t, id, domain.ChannelEmail, "the scheduled email released and sent", status(domain.StatusSent))
	for _, addr := range append(addrs, later) {
		stacktest.Eventually(t, settle, "an email to "+addr, func() bool { return len(stacktest.EmailsTo(t, addr)) == 1 })
	}
}

// Last: every function log line of the run, searched for the personal data
// the run sent and for anything shaped like an address, a phone number or a
// push endpoint.
func TestLogsCarryNoPersonalData(t *testing.T) {
	out := logs.String()
	if len(out) < 1000 || !strings.Contains(out, `"function":"ApiFunction"`) {
		t.Fatalf("the capture holds %d bytes: is it working?", len(out))
	}
	// The scan covers every function that handled the run's personal data
	// (its notifications are high priority: the high-priority relay plans
	// them, and logs the scheduled one's deferral; the bulk relay only
	// queues the campaign's normal ones, which it does not log).
	for _, fn := range []string{"ApiFunction", "RelayHighFunction", "EmailFunction", "PushFunction", "CampaignFunction", "SchedulerFunction"} {
		if !strings.Contains(out, `"function":"`+fn+`"`) {
			t.Errorf("no log line of %s: the scan does not cover it", fn)
		}
	}
	if !strings.Contains(out, `"message":"campaign lot created","function":"CampaignFunction"`) ||
		!strings.Contains(out, `"message":"deliveries released","function":"SchedulerFunction"`) {
		t.Errorf("the capture lacks the campaign fan-out or the scheduler's release")
	}
	used.Lock()
	defer used.Unlock()
	if len(used.values) < 5 {
		t.Fatalf("only %d canaries: did the earlier tests run?", len(used.values))
	}
	for value, what := range used.values {
		if strings.Contains(strings.ToLower(out), strings.ToLower(value)) {
			t.Errorf("the logs contain a %s (%s)", what, value)
		}
	}
	for what, re := range map[string]*regexp.Regexp{
		"email address": regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`),
		"phone number":  regexp.MustCompile(`\+[1-9][0-9]{7,14}\b`),
		"push endpoint": regexp.MustCompile(`/_dev/push/endpoints/[A-Za-z0-9]+`),
	} {
		for _, m := range re.FindAllString(out, -1) {
			if what == "email address" && (strings.HasSuffix(m, "@example.com") && strings.HasPrefix(m, "ops@") || strings.Contains(m, "notifications@example.com")) {
				continue // the service's own configured addresses (VAPID contact, sender)
			}
			t.Errorf("the logs contain a %s: %s", what, m)
		}
	}
}
