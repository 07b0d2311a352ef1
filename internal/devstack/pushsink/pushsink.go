// Package pushsink is a local Web Push service for the dev runner and tests.
//
// It plays the browser vendor's push service: it hands out browser-style
// subscriptions whose private keys it keeps, and for each push it verifies
// VAPID, decrypts the RFC 8291 payload and records the plaintext so tests and
// developers can see exactly what a browser would have received. Status codes
// follow RFC 8030/8292 as real services use them (201 accepted, 401/403 bad
// VAPID, 400 bad request or encryption, 404 unknown, 410 expired, 413 too
// large), and faults such as 429 or 500 can be injected.
//
// Routes, below the base URL's path:
//
//	POST   /_dev/push-subscriptions        new subscription (201, browser PushSubscription JSON plus "id");
//	                                       optional body {"applicationServerKey": "<base64url>"} restricts it to one VAPID key
//	DELETE /_dev/push-subscriptions/{id}   expire it: later pushes answer 410 (204; unknown id 404)
//	POST   /_dev/push/endpoints/{id}       the push endpoint
//	GET    /_dev/push                      received messages, newest first (?subscriptionId= filters)
//	DELETE /_dev/push                      forget received messages
//	GET    /_dev/push/messages/{id}        one received message (the Location of a push)
//	POST   /_dev/push/faults               {"count": 2, "status": 429, "retryAfterSeconds": 1}
package pushsink

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/webpush"
)

// ErrUnknownSubscription is returned for ids the sink never issued.
var ErrUnknownSubscription = errors.New("pushsink: unknown subscription")

// Message is one push the sink accepted and decrypted.
type Message struct {
	ID             string `json:"id"`
	SubscriptionID string `json:"subscriptionId"`
	Endpoint       string `json:"endpoint"`
	// Payload is the decrypted body: its JSON value when it is valid JSON
	// (a json.RawMessage), otherwise the text as a string.
	Payload any `json:"payload"`
	// Body is the decrypted body as bytes, for Go callers.
	Body       []byte    `json:"-"`
	TTL        int       `json:"ttl"`
	Urgency    string    `json:"urgency"`
	Topic      string    `json:"topic"`
	VAPIDSub   string    `json:"vapidSub"`
	ReceivedAt time.Time `json:"receivedAt"`
}

type subscription struct {
	id       string
	endpoint string
	public   webpush.Subscription
	// privateKey and authSecret are the browser-side secrets the sink keeps
	// to decrypt pushes.
	privateKey *ecdh.PrivateKey
	authSecret []byte
	// applicationServerKey, when set, is the only VAPID key accepted
	// (RFC 8292 §3.2 restricted subscriptions).
	applicationServerKey []byte
	expired              bool
	received             int
}

type fault struct {
	remaining  int
	status     int // 0: a slow push, processed after delay
	retryAfter time.Duration
	delay      time.Duration
}

// SlowCall is one provider call an injected slow fault held: how long it
// waited, and whether the caller gave up first (then nothing was delivered).
type SlowCall struct {
	Waited    time.Duration
	Abandoned bool
}

// Sink is the local push service. It is an http.Handler and safe for
// concurrent use.
type Sink struct {
	base     string // base URL without trailing slash
	basePath string
	origin   string
	now      func() time.Time
	mux      *http.ServeMux

	mu            sync.Mutex
	subscriptions map[string]*subscription
	messages      []Message // oldest first
	faults        []fault
	slowCalls     []SlowCall
}

// EndpointPath is the path prefix of every push endpoint the sink issues
// (after its base URL's path): the only path of the runner's address the
// push allow-list admits.
const EndpointPath = "/_dev/push/endpoints/"

// New returns a sink reachable at baseURL (for example
// http://127.0.0.1:3000); endpoints it issues start with that URL and VAPID
// tokens must name its origin as audience. now is the clock for VAPID expiry
// and timestamps; nil means time.Now.
func New(baseURL string, now func() time.Time) (*Sink, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("pushsink: base URL %q must be an absolute http(s) URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("pushsink: base URL %q must not have user info, query or fragment", baseURL)
	}
	if now == nil {
		now = time.Now
	}
	s := &Sink{
		base:          strings.TrimSuffix(u.String(), "/"),
		basePath:      strings.TrimSuffix(u.EscapedPath(), "/"),
		origin:        u.Scheme + "://" + u.Host,
		now:           now,
		mux:           http.NewServeMux(),
		subscriptions: map[string]*subscription{},
	}
	p := s.basePath
	s.mux.HandleFunc("POST "+p+"/_dev/push-subscriptions", s.handleCreateSubscription)
	s.mux.HandleFunc("DELETE "+p+"/_dev/push-subscriptions/{id}", s.handleExpireSubscription)
	s.mux.HandleFunc("POST "+p+EndpointPath+"{id}", s.handlePush)
	s.mux.HandleFunc("GET "+p+"/_dev/push", s.handleList)
	s.mux.HandleFunc("DELETE "+p+"/_dev/push", s.handleClear)
	s.mux.HandleFunc("GET "+p+"/_dev/push/messages/{id}", s.handleGetMessage)
	s.mux.HandleFunc("POST "+p+"/_dev/push/faults", s.handleInjectFault)
	return s, nil
}

// ServeHTTP routes the sink's endpoints.
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Origin is the VAPID audience the sink expects.
func (s *Sink) Origin() string { return s.origin }

// NewSubscription creates a subscription as a browser's pushManager.subscribe
// would and returns its id with the public PushSubscription. A non-empty
// applicationServerKey (base64url VAPID public key) restricts the
// subscription to that key.
func (s *Sink) NewSubscription(applicationServerKey string) (string, webpush.Subscription, error) {
	var restrictTo []byte
	if applicationServerKey != "" {
		key, err := decodeBase64(applicationServerKey)
		if err != nil || len(key) != webpush.PublicKeySize {
			return "", webpush.Subscription{}, errors.New("pushsink: applicationServerKey must be a base64url uncompressed P-256 point")
		}
		if _, err := ecdh.P256().NewPublicKey(key); err != nil {
			return "", webpush.Subscription{}, errors.New("pushsink: applicationServerKey is not a P-256 point")
		}
		restrictTo = key
	}
	privateKey, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return "", webpush.Subscription{}, fmt.Errorf("pushsink: %w", err)
	}
	auth := make([]byte, webpush.AuthSecretSize)
	if _, err := rand.Read(auth); err != nil {
		return "", webpush.Subscription{}, fmt.Errorf("pushsink: %w", err)
	}
	id := newID()
	sub := &subscription{
		id:       id,
		endpoint: s.base + EndpointPath + id,
		public: webpush.Subscription{
			P256dh: base64.RawURLEncoding.EncodeToString(privateKey.PublicKey().Bytes()),
			Auth:   base64.RawURLEncoding.EncodeToString(auth),
		},
		privateKey:           privateKey,
		authSecret:           auth,
		applicationServerKey: restrictTo,
	}
	sub.public.Endpoint = sub.endpoint

	s.mu.Lock()
	defer s.mu.Unlock()
	s.subscriptions[id] = sub
	return id, sub.public, nil
}

// Expire makes every later push to the subscription answer 410 Gone, as a
// push service does after the user revokes permission or the browser
// unsubscribes.
func (s *Sink) Expire(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subscriptions[id]
	if !ok {
		return ErrUnknownSubscription
	}
	sub.expired = true
	return nil
}

// FailNext makes the next n pushes (to any endpoint) answer status without
// being processed, with a Retry-After header of whole seconds when
// retryAfter > 0. Calls queue up: faults are served in the order injected.
func (s *Sink) FailNext(n, status int, retryAfter time.Duration) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{remaining: n, status: status, retryAfter: retryAfter})
}

// SlowNext makes the next n pushes answer only after delay, then be
// processed as usual. A push whose sender gives up first (its request is
// cancelled: the connection closed) is not delivered, as a push service
// does not accept a request it has not read to the end and answered.
// Calls queue up with FailNext's.
func (s *Sink) SlowNext(n int, delay time.Duration) {
	if n <= 0 || delay <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{remaining: n, delay: delay})
}

// SlowCalls are the pushes slow faults held, oldest first.
func (s *Sink) SlowCalls() []SlowCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.slowCalls)
}

// ClearFaults drops every pending injected fault.
func (s *Sink) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// PendingFaults is the first pending injected fault's status and how many
// pushes in all will still fail; 0, 0 when none.
func (s *Sink) PendingFaults() (status, remaining int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if status == 0 {
			status = f.status
		}
		remaining += f.remaining
	}
	return status, remaining
}

// Messages returns the listed messages, newest first. A later message with
// the same Topic for the same subscription replaces the earlier one.
func (s *Sink) Messages() []Message { return s.listMessages("") }

// MessagesFor returns the listed messages of one subscription, newest first.
func (s *Sink) MessagesFor(subscriptionID string) []Message { return s.listMessages(subscriptionID) }

// ReceivedCount is how many pushes the subscription accepted in total,
// including ones later collapsed by Topic, so tests can detect duplicates.
func (s *Sink) ReceivedCount(subscriptionID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub, ok := s.subscriptions[subscriptionID]; ok {
		return sub.received
	}
	return 0
}

// Reset forgets received messages, counters and pending faults; subscriptions
// stay valid.
func (s *Sink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages = nil
	s.faults = nil
	s.slowCalls = nil
	for _, sub := range s.subscriptions {
		sub.received = 0
	}
}

func (s *Sink) listMessages(subscriptionID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, 0, len(s.messages))
	for i := len(s.messages) - 1; i >= 0; i-- {
		m := s.messages[i]
		if subscriptionID != "" && m.SubscriptionID != subscriptionID {
			continue
		}
		m.Body = bytes.Clone(m.Body)
		out = append(out, m)
	}
	return out
}

func (s *Sink) handleCreateSubscription(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ApplicationServerKey string `json:"applicationServerKey"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		writeError(w, http.StatusBadRequest, "unreadable body")
		return
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, "body must be JSON like {\"applicationServerKey\": \"…\"}")
			return
		}
	}
	id, sub, err := s.NewSubscription(req.ApplicationServerKey)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	w.Header().Set("Location", s.base+"/_dev/push-subscriptions/"+id)
	writeJSON(w, http.StatusCreated, createdSubscription{ID: id, Endpoint: sub.Endpoint, Keys: subscriptionKeys{P256dh: sub.P256dh, Auth: sub.Auth}})
}

// createdSubscription is PushSubscription.toJSON() plus the sink's id.
type createdSubscription struct {
	ID             string           `json:"id"`
	Endpoint       string           `json:"endpoint"`
	ExpirationTime *int64           `json:"expirationTime"`
	Keys           subscriptionKeys `json:"keys"`
}

type subscriptionKeys struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

func (s *Sink) handleExpireSubscription(w http.ResponseWriter, r *http.Request) {
	if err := s.Expire(r.PathValue("id")); err != nil {
		writeError(w, http.StatusNotFound, "no such subscription")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handlePush is the push endpoint (RFC 8030 §5).
func (s *Sink) handlePush(w http.ResponseWriter, r *http.Request) {
	f, ok := s.takeFault()
	if ok && f.delay > 0 {
		// Read first: the server notices a sender that hangs up only once
		// the request body has been read (the checks below read it again).
		buf, _ := io.ReadAll(io.LimitReader(r.Body, webpush.MaxBodySize+1))
		r.Body = io.NopCloser(bytes.NewReader(buf))
		call, abandoned := HoldSlow(r.Context(), f.delay)
		s.mu.Lock()
		s.slowCalls = append(s.slowCalls, call)
		s.mu.Unlock()
		if abandoned != nil {
			return // the sender is gone: no answer, nothing delivered
		}
	} else if ok {
		if f.retryAfter > 0 {
			seconds := int64((f.retryAfter + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(seconds, 10))
		}
		writeError(w, f.status, "injected fault")
		return
	}

	s.mu.Lock()
	sub, ok := s.subscriptions[r.PathValue("id")]
	var expired bool
	if ok {
		expired = sub.expired
	}
	s.mu.Unlock()
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "no such subscription")
		return
	case expired:
		writeError(w, http.StatusGone, "subscription expired")
		return
	}

	now := s.now()
	claims, key, err := webpush.VerifyVAPID(r.Header.Get("Authorization"), s.origin, now)
	if err != nil {
		writeError(w, http.StatusUnauthorized, err.Error())
		return
	}
	if sub.applicationServerKey != nil {
		point, err := key.Bytes()
		if err != nil || !bytes.Equal(point, sub.applicationServerKey) {
			writeError(w, http.StatusForbidden, webpush.ErrVAPIDKeyMismatch.Error())
			return
		}
	}

	ttl, err := strconv.Atoi(r.Header.Get("TTL"))
	if err != nil || ttl < 0 {
		writeError(w, http.StatusBadRequest, "TTL header must be a non-negative integer")
		return
	}
	if enc := r.Header.Get("Content-Encoding"); !strings.EqualFold(enc, "aes128gcm") {
		writeError(w, http.StatusBadRequest, "Content-Encoding must be aes128gcm")
		return
	}
	urgency := r.Header.Get("Urgency")
	if urgency != "" && !webpush.Urgency(urgency).Valid() {
		writeError(w, http.StatusBadRequest, "Urgency must be very-low, low, normal or high")
		return
	}
	topic := r.Header.Get("Topic")
	if err := webpush.ValidateTopic(topic); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, webpush.MaxBodySize))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body exceeds %d bytes", webpush.MaxBodySize))
			return
		}
		writeError(w, http.StatusBadRequest, "unreadable body")
		return
	}
	plaintext, err := webpush.Decrypt(body, sub.privateKey, sub.authSecret)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}

	msg := Message{
		ID:             newID(),
		SubscriptionID: sub.id,
		Endpoint:       sub.endpoint,
		Payload:        payloadValue(plaintext),
		Body:           plaintext,
		TTL:            ttl,
		Urgency:        urgency,
		Topic:          topic,
		VAPIDSub:       claims.Subject,
		ReceivedAt:     now,
	}
	s.record(sub, msg)
	w.Header().Set("Location", s.base+"/_dev/push/messages/"+msg.ID)
	w.WriteHeader(http.StatusCreated)
}

// HoldSlow waits delay, or until ctx ends first (the caller gave up): then
// it returns ctx's error and the call must not be carried out.
func HoldSlow(ctx context.Context, delay time.Duration) (SlowCall, error) {
	start := time.Now()
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return SlowCall{Waited: time.Since(start)}, nil
	case <-ctx.Done():
		return SlowCall{Waited: time.Since(start), Abandoned: true}, ctx.Err()
	}
}

func (s *Sink) takeFault() (fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return fault{}, false
	}
	f := s.faults[0]
	s.faults[0].remaining--
	if s.faults[0].remaining == 0 {
		s.faults = s.faults[1:]
	}
	return f, true
}

// record lists msg, replacing a still-listed message with the same Topic for
// the same subscription, as push services collapse undelivered messages
// (RFC 8030 §5.4).
func (s *Sink) record(sub *subscription, msg Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub.received++
	if msg.Topic != "" {
		s.messages = slices.DeleteFunc(s.messages, func(m Message) bool {
			return m.SubscriptionID == msg.SubscriptionID && m.Topic == msg.Topic
		})
	}
	s.messages = append(s.messages, msg)
}

func (s *Sink) handleList(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.listMessages(r.URL.Query().Get("subscriptionId")))
}

func (s *Sink) handleClear(w http.ResponseWriter, r *http.Request) {
	s.Reset()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Sink) handleGetMessage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, m := range s.Messages() {
		if m.ID == id {
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	writeError(w, http.StatusNotFound, "no such message (never received, collapsed by Topic, or cleared)")
}

func (s *Sink) handleInjectFault(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Count             int `json:"count"`
		Status            int `json:"status"`
		RetryAfterSeconds int `json:"retryAfterSeconds"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil ||
		req.Count <= 0 || req.Status < 100 || req.Status > 599 || req.RetryAfterSeconds < 0 {
		writeError(w, http.StatusBadRequest, `body must be {"count": n > 0, "status": 100..599, "retryAfterSeconds": n >= 0}`)
		return
	}
	s.FailNext(req.Count, req.Status, time.Duration(req.RetryAfterSeconds)*time.Second)
	w.WriteHeader(http.StatusNoContent)
}

// payloadValue shows JSON payloads as JSON and anything else as text.
func payloadValue(plaintext []byte) any {
	if len(plaintext) > 0 && json.Valid(plaintext) {
		return json.RawMessage(bytes.Clone(plaintext))
	}
	return string(plaintext)
}

func newID() string { return strings.ToLower(rand.Text()) }

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "+/") {
		return base64.RawStdEncoding.DecodeString(s)
	}
	return base64.RawURLEncoding.DecodeString(s)
}

// writeError answers in the JSON shape Mozilla's autopush uses, so the
// sender's error reason shows something useful.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{"code": status, "error": http.StatusText(status), "message": message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
