package webpush

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Urgency is the RFC 8030 §5.3 hint that lets a push service save the
// device's battery for unimportant messages.
type Urgency string

// The four urgencies RFC 8030 defines.
const (
	UrgencyVeryLow Urgency = "very-low"
	UrgencyLow     Urgency = "low"
	UrgencyNormal  Urgency = "normal"
	UrgencyHigh    Urgency = "high"
)

// Valid reports whether u is one of the four defined urgencies.
func (u Urgency) Valid() bool {
	switch u {
	case UrgencyVeryLow, UrgencyLow, UrgencyNormal, UrgencyHigh:
		return true
	}
	return false
}

// MaxTopicLength is the RFC 8030 §5.4 limit on the Topic header.
const MaxTopicLength = 32

// ErrInvalidMessage is matched by every Message validation failure.
var ErrInvalidMessage = errors.New("webpush: invalid message")

// Message validation sentinels; each also matches ErrInvalidMessage.
var (
	ErrInvalidTTL     = fmt.Errorf("%w: negative TTL", ErrInvalidMessage)
	ErrInvalidUrgency = fmt.Errorf("%w: urgency must be very-low, low, normal or high", ErrInvalidMessage)
	ErrInvalidTopic   = fmt.Errorf("%w: topic must be at most 32 characters of the base64url alphabet", ErrInvalidMessage)
)

// ValidateTopic checks the RFC 8030 §5.4 rule: at most 32 characters, all from
// the URL- and filename-safe base64 alphabet.
func ValidateTopic(topic string) error {
	if len(topic) > MaxTopicLength {
		return ErrInvalidTopic
	}
	for i := 0; i < len(topic); i++ {
		c := topic[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return ErrInvalidTopic
		}
	}
	return nil
}

// TopicFor derives a valid Topic from any identifier: the first 32 characters
// of the base64url SHA-256 of id. The same notification therefore always
// carries the same topic, so a push service replaces an undelivered earlier
// attempt instead of showing the user a duplicate.
func TopicFor(notificationID string) string {
	sum := sha256.Sum256([]byte(notificationID))
	return encodeBase64URL(sum[:])[:MaxTopicLength]
}

// Message is one push to send.
type Message struct {
	// Payload is the plaintext, at most MaxPlaintextSize bytes; it may be empty.
	Payload []byte
	// TTL is how long the push service keeps the message for an offline
	// device; it is sent in whole seconds. Zero means "deliver now or drop".
	TTL time.Duration
	// Urgency is optional; empty leaves the header out (the service assumes normal).
	Urgency Urgency
	// Topic is optional; see TopicFor.
	Topic string
}

func (m Message) validate() error {
	if m.TTL < 0 {
		return ErrInvalidTTL
	}
	if m.Urgency != "" && !m.Urgency.Valid() {
		return ErrInvalidUrgency
	}
	return ValidateTopic(m.Topic)
}

// Result describes an accepted push.
type Result struct {
	// StatusCode is the push service's 2xx status (normally 201).
	StatusCode int
	// MessageID is the Location header (the push message resource), if any.
	MessageID string
}

// ErrSubscriptionGone is matched by a *ProviderError for 404 or 410: the
// subscription has expired or was unsubscribed and must be deleted.
var ErrSubscriptionGone = errors.New("webpush: subscription is gone")

// ProviderError is any send that the push service did not accept, including
// network failures (StatusCode 0). Transient errors are worth retrying,
// after RetryAfter when the service said so; the rest never will succeed.
type ProviderError struct {
	// StatusCode is the HTTP status, or 0 when no response arrived.
	StatusCode int
	// Transient is true for 408, 429, 5xx, network errors and timeouts.
	Transient bool
	// RetryAfter is the parsed Retry-After header (delay-seconds or
	// HTTP-date), zero when absent or unparseable.
	RetryAfter time.Duration
	// Origin is the scheme://host of the endpoint (never the full URL).
	Origin string
	// Reason is the start of the response body, for diagnostics.
	Reason string
	// Err is the transport error when StatusCode is 0.
	Err error
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString("webpush: ")
	if e.StatusCode == 0 {
		fmt.Fprintf(&b, "sending to %s: %v", e.Origin, e.Err)
	} else {
		fmt.Fprintf(&b, "%s answered %d %s", e.Origin, e.StatusCode, http.StatusText(e.StatusCode))
		if e.Reason != "" {
			fmt.Fprintf(&b, ": %s", e.Reason)
		}
	}
	if e.Transient {
		b.WriteString(" (transient")
		if e.RetryAfter > 0 {
			fmt.Fprintf(&b, ", retry after %s", e.RetryAfter)
		}
		b.WriteString(")")
	} else {
		b.WriteString(" (permanent)")
	}
	return b.String()
}

func (e *ProviderError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrSubscriptionGone) true for 404 and 410.
func (e *ProviderError) Is(target error) bool {
	return target == ErrSubscriptionGone && e.Gone()
}

// Gone reports a 404 or 410: delete the subscription.
func (e *ProviderError) Gone() bool {
	return e.StatusCode == http.StatusNotFound || e.StatusCode == http.StatusGone
}

// Doer is the part of *http.Client the Sender needs, so tests and callers can
// wrap it (tracing, fault injection).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// SenderConfig configures a Sender.
type SenderConfig struct {
	Keys VAPIDKeys
	// Contact is the VAPID "sub": an e-mail address, mailto: URI or https: URL.
	Contact string
	// VAPIDTTL is the token lifetime (default 12 h, clamped to 24 h).
	VAPIDTTL time.Duration
	// Client sends the requests. Nil means an *http.Client with a 30 s
	// timeout that does not follow redirects (a redirected POST would
	// silently turn into a GET) and connects only to public addresses
	// (loopback too when AllowInsecureLoopback is set).
	Client Doer
	// Now is the clock for VAPID expiry and Retry-After dates; nil is time.Now.
	Now func() time.Time
	// Hosts is the allow-list of push services, checked before every send;
	// the zero value is DefaultPushServices.
	Hosts HostList
	// AllowInsecureLoopback lets the Sender reach the local push service on
	// loopback (over http too, and dialing loopback addresses). Keep it false
	// in production.
	AllowInsecureLoopback bool
	// PadTo pads every payload to this many bytes to hide its length (see
	// EncryptOptions.PadTo). Zero disables padding.
	PadTo int
}

// Sender delivers Messages to Subscriptions. It holds no mutable state and is
// safe for concurrent use.
type Sender struct {
	vapid      *VAPIDSigner
	client     Doer
	now        func() time.Time
	validation ValidationOptions
	padTo      int
}

// maxReasonBytes bounds how much of an error response body is kept.
const maxReasonBytes = 512

// NewSender validates the configuration.
func NewSender(cfg SenderConfig) (*Sender, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	signer, err := NewVAPIDSigner(VAPIDConfig{Keys: cfg.Keys, Contact: cfg.Contact, TTL: cfg.VAPIDTTL, Now: now})
	if err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		client = newClient(cfg.AllowInsecureLoopback)
	}
	return &Sender{
		vapid:      signer,
		client:     client,
		now:        now,
		validation: ValidationOptions{Hosts: cfg.Hosts, AllowInsecureLoopback: cfg.AllowInsecureLoopback},
		padTo:      cfg.PadTo,
	}, nil
}

// Send encrypts msg for sub and POSTs it to the subscription's endpoint.
//
// Errors before the request (invalid subscription, including an endpoint off
// the allow-list or one that resolves to a non-public address: *SubscriptionError;
// invalid message: ErrInvalidMessage; oversized payload: ErrPayloadTooLarge)
// are permanent. Errors after it are *ProviderError; errors.Is(err,
// ErrSubscriptionGone) tells that the subscription must be deleted.
func (s *Sender) Send(ctx context.Context, sub Subscription, msg Message) (Result, error) {
	endpoint, err := parseEndpoint(sub.Endpoint, s.validation)
	if err != nil {
		return Result{}, err
	}
	if err := msg.validate(); err != nil {
		return Result{}, err
	}
	body, err := Encrypt(sub, msg.Payload, EncryptOptions{PadTo: s.padTo})
	if err != nil {
		return Result{}, err
	}
	endpointOrigin := origin(endpoint) // parseEndpoint checked it is absolute with a host
	authorization, err := s.vapid.authorization(endpointOrigin)
	if err != nil {
		return Result{}, err
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Endpoint, bytes.NewReader(body))
	if err != nil {
		return Result{}, endpointError("not a usable request URL")
	}
	req.Header.Set("TTL", strconv.FormatInt(int64(msg.TTL/time.Second), 10))
	if msg.Urgency != "" {
		req.Header.Set("Urgency", string(msg.Urgency))
	}
	if msg.Topic != "" {
		req.Header.Set("Topic", msg.Topic)
	}
	req.Header.Set("Content-Encoding", "aes128gcm")
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", authorization)

	resp, err := s.client.Do(req)
	if errors.Is(err, errNonPublicAddress) {
		return Result{}, notAllowedError("resolves to a non-public address")
	}
	if err != nil {
		return Result{}, &ProviderError{Transient: true, Origin: endpointOrigin, Err: withoutURL(err)}
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		_ = resp.Body.Close()
	}()
	return s.classify(resp, endpointOrigin)
}

// classify maps the push service's answer to a Result or *ProviderError.
func (s *Sender) classify(resp *http.Response, endpointOrigin string) (Result, error) {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return Result{StatusCode: resp.StatusCode, MessageID: resp.Header.Get("Location")}, nil
	}
	perr := &ProviderError{
		StatusCode: resp.StatusCode,
		Origin:     endpointOrigin,
		RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), s.now()),
		Reason:     readReason(resp.Body),
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests,
		resp.StatusCode == http.StatusRequestTimeout,
		resp.StatusCode >= 500:
		perr.Transient = true
	}
	return Result{}, perr
}

// ParseRetryAfter reads a Retry-After value in either RFC 9110 form:
// delay-seconds ("120") or an HTTP-date relative to now. It returns 0 for
// an empty, malformed or past value.
func ParseRetryAfter(value string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	if seconds, err := strconv.ParseInt(value, 10, 64); err == nil {
		if seconds <= 0 {
			return 0
		}
		const maxSeconds = int64(1<<63-1) / int64(time.Second)
		return time.Duration(min(seconds, maxSeconds)) * time.Second
	}
	if at, err := http.ParseTime(value); err == nil {
		if d := at.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// readReason keeps a short, printable prefix of an error body.
func readReason(body io.Reader) string {
	buf, _ := io.ReadAll(io.LimitReader(body, maxReasonBytes))
	reason := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, string(buf))
	return strings.TrimSpace(reason)
}

// withoutURL strips the *url.Error wrapper, whose message quotes the full
// endpoint URL, keeping the operation and cause (timeouts and context errors
// stay detectable with errors.Is / net.Error).
func withoutURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}
