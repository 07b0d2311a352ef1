package push

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// Native mobile push goes through SNS mobile push: one Publish per device to
// its platform endpoint, with MessageStructure json and the platform's own
// payload under its key.

// MaxMobilePayload is the limit of a platform payload: APNs accepts 4096
// bytes of JSON for a notification, FCM 4096 bytes for a message; a payload
// over it is shortened (catalog.FitPushAs), never dropped.
const MaxMobilePayload = 4096

// SNS message attributes of a mobile publish (SNS Developer Guide: APNs push
// type and priority; the per-platform TTL attributes).
const (
	AttrAPNsPushType = "AWS.SNS.MOBILE.APNS.PUSH_TYPE"
	AttrAPNsPriority = "AWS.SNS.MOBILE.APNS.PRIORITY"
)

// snsKeys are the keys of a MessageStructure json message per platform.
var snsKeys = map[domain.Platform]string{
	domain.PlatformAPNs: "APNS", domain.PlatformAPNsSandbox: "APNS_SANDBOX", domain.PlatformFCM: "GCM",
}

// ttlAttr is the SNS TTL message attribute of each platform.
var ttlAttr = map[domain.Platform]string{
	domain.PlatformAPNs: "AWS.SNS.MOBILE.APNS.TTL", domain.PlatformAPNsSandbox: "AWS.SNS.MOBILE.APNS_SANDBOX.TTL",
	domain.PlatformFCM: "AWS.SNS.MOBILE.FCM.TTL",
}

// MobileMessage is one SNS publish to a platform endpoint.
type MobileMessage struct {
	// Message is the SNS Message with MessageStructure json:
	// {"default": …, "<APNS|APNS_SANDBOX|GCM>": "<platform payload JSON>"}.
	Message string
	// Attributes are SNS message attributes (DataType String).
	Attributes map[string]string
	// Payload is the platform payload (the string under the platform's key).
	Payload []byte
	// Shortened reports that the content was cut to fit MaxMobilePayload.
	Shortened bool
}

// MobileContent is what a device shows and opens.
type MobileContent struct {
	Payload  catalog.PushPayload // id, title, body, url
	Type     string              // the notification type: APNs thread-id
	Priority domain.Priority
	TTL      time.Duration // how long the push service keeps it (≥ 1 s)
}

type apnsAlert struct {
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
}

type apnsPayload struct {
	APS struct {
		Alert    apnsAlert `json:"alert"`
		ThreadID string    `json:"thread-id,omitempty"`
	} `json:"aps"`
	ID  string `json:"id"`
	URL string `json:"url,omitempty"`
}

type fcmPayload struct {
	FCMV1Message struct {
		Message struct {
			Notification struct {
				Title string `json:"title"`
				Body  string `json:"body,omitempty"`
			} `json:"notification"`
			Data    map[string]string `json:"data"`
			Android struct {
				Priority string `json:"priority"`
				TTL      string `json:"ttl"`
			} `json:"android"`
		} `json:"message"`
	} `json:"fcmV1Message"`
}

// platformPayload encodes p as platform's payload (without HTML escaping,
// which would inflate '<', '>' and '&' against the limit).
func platformPayload(platform domain.Platform, c MobileContent, p catalog.PushPayload) []byte {
	var v any
	switch platform {
	case domain.PlatformFCM:
		var f fcmPayload
		m := &f.FCMV1Message.Message
		m.Notification.Title, m.Notification.Body = p.Title, p.Body
		m.Data = map[string]string{"id": p.ID}
		if p.URL != "" {
			m.Data["url"] = p.URL
		}
		m.Android.Priority = "NORMAL"
		if c.Priority == domain.PriorityHigh {
			m.Android.Priority = "HIGH"
		}
		m.Android.TTL = strconv.FormatInt(int64(ttlSeconds(c.TTL)), 10) + "s"
		v = f
	default:
		var a apnsPayload
		a.APS.Alert = apnsAlert{Title: p.Title, Body: p.Body}
		a.APS.ThreadID = c.Type
		a.ID, a.URL = p.ID, p.URL
		v = a
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings and maps of strings only: cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func ttlSeconds(d time.Duration) int {
	return max(int(d/time.Second), 1)
}

// BuildMobile makes the SNS publish of c for a device on platform: the
// platform payload shortened to MaxMobilePayload as a Web Push payload is,
// APNs push type alert with priority 10 for high priority (5 otherwise), and
// the platform's TTL attribute.
func BuildMobile(platform domain.Platform, c MobileContent) (MobileMessage, error) {
	key, ok := snsKeys[platform]
	if !ok {
		return MobileMessage{}, fmt.Errorf("unknown platform %q", platform)
	}
	encode := func(p catalog.PushPayload) []byte { return platformPayload(platform, c, p) }
	fitted, shortened, err := catalog.FitPushAs(c.Payload, MaxMobilePayload, encode)
	if err != nil {
		return MobileMessage{}, err
	}
	payload := encode(fitted)
	msg, err := json.Marshal(map[string]string{"default": fitted.Title, key: string(payload)})
	if err != nil {
		return MobileMessage{}, err
	}
	attrs := map[string]string{ttlAttr[platform]: strconv.Itoa(ttlSeconds(c.TTL))}
	if platform != domain.PlatformFCM {
		attrs[AttrAPNsPushType] = "alert"
		attrs[AttrAPNsPriority] = "5"
		if c.Priority == domain.PriorityHigh {
			attrs[AttrAPNsPriority] = "10"
		}
	}
	return MobileMessage{Message: string(msg), Attributes: attrs, Payload: payload, Shortened: shortened}, nil
}

// Mobile publishes to SNS platform endpoints and deletes them (the SNS
// adapter, internal/snspush). Its errors are *MobileError.
type Mobile interface {
	Publish(ctx context.Context, endpointARN string, m MobileMessage) (messageID string, err error)
	DeleteEndpoint(ctx context.Context, endpointARN string) error
}

// Devices removes devices whose endpoint is gone.
type Devices interface {
	DeleteDevice(ctx context.Context, userID, deviceID string) error
}

// MobileErrorKind classifies a failed mobile publish.
type MobileErrorKind int

const (
	// MobileTransient: throttled or a service error; retried.
	MobileTransient MobileErrorKind = iota
	// MobileGone: the endpoint is disabled (the platform said the token is
	// invalid) or no longer exists; the device is removed.
	MobileGone
	// MobileRejected: this publish refused (a bad request); not retried.
	MobileRejected
)

// MobileError is a classified SNS mobile push error. Code is SNS's error
// code (never PII).
type MobileError struct {
	Kind MobileErrorKind
	Code string
	// Alert: an operator must act (the platform application's credentials
	// were refused: PlatformApplicationDisabled; the account may not
	// publish); such errors are MobileTransient: no device is at fault.
	Alert bool
	Err   error
}

func (e *MobileError) Error() string { return fmt.Sprintf("mobile push %s: %v", e.Code, e.Err) }
func (e *MobileError) Unwrap() error { return e.Err }

// ErrNoMobile is the error of a device send when the provider has no mobile
// sender wired.
var ErrNoMobile = errors.New("no mobile push sender configured")
