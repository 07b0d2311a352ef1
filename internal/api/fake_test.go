package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/storetest"
)

// fakeStore is an in-memory table with the same conditional semantics as the
// DynamoDB store: create-if-absent returning the existing item, transitions
// conditional on the source state, cancel conditional on the caller.
type fakeStore struct {
	mu            sync.Mutex
	notifications map[string]*domain.Notification
	deliveries    *storetest.MemDeliveries
	users         map[string]*domain.User
	subs          map[string]map[string]domain.PushSubscription
	prefs         map[string]domain.Preferences
	budgets       map[string]domain.Budget
	writes        int
	fail          error // returned by every call when set
	// failCreateDelivery is returned by CreateDelivery when set.
	failCreateDelivery error
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		notifications: map[string]*domain.Notification{}, deliveries: storetest.NewMemDeliveries(nil),
		users: map[string]*domain.User{}, subs: map[string]map[string]domain.PushSubscription{}, prefs: map[string]domain.Preferences{},
		budgets: map[string]domain.Budget{},
	}
}

var (
	_ NotificationStore     = (*fakeStore)(nil)
	_ UserStore             = (*fakeStore)(nil)
	_ PushSubscriptionStore = (*fakeStore)(nil)
	_ PreferenceStore       = (*fakeStore)(nil)
	_ BudgetPreferenceStore = (*fakeStore)(nil)
)

func (f *fakeStore) CreateNotification(_ context.Context, n *domain.Notification) (*domain.Notification, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	if existing, ok := f.notifications[n.ID]; ok {
		cp := *existing
		return &cp, fmt.Errorf("create notification %s: %w", n.ID, domain.ErrConflict)
	}
	cp := *n
	f.notifications[n.ID] = &cp
	f.writes++
	return n, nil
}

func (f *fakeStore) GetNotificationWithDeliveries(_ context.Context, id string) (*domain.Notification, []domain.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, nil, f.fail
	}
	n, ok := f.notifications[id]
	if !ok {
		return nil, nil, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
	}
	cp := *n
	return &cp, f.deliveries.Of(id), nil
}

func (f *fakeStore) CancelNotification(_ context.Context, id, caller string) (*domain.Notification, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	n, ok := f.notifications[id]
	if !ok || n.Caller != caller {
		return nil, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
	}
	if n.Status != domain.NotificationCancelled {
		n.Status, n.CancelledAt = domain.NotificationCancelled, time.Now()
		f.writes++
	}
	cp := *n
	return &cp, nil
}

// Transition is the shared in-memory table's (storetest.MemDeliveries),
// which runs the store contract with the DynamoDB adapter.
func (f *fakeStore) Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	d, err := f.deliveries.Transition(ctx, id, ch, c)
	if err == nil {
		f.writes++
	}
	return d, err
}

func (f *fakeStore) CreateDelivery(ctx context.Context, d *domain.Delivery) (*domain.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	if f.failCreateDelivery != nil {
		return nil, f.failCreateDelivery
	}
	got, err := f.deliveries.CreateDelivery(ctx, d)
	if err == nil {
		f.writes++
	}
	return got, err
}

func (f *fakeStore) addDelivery(d domain.Delivery) { f.deliveries.Put(d) }

func (f *fakeStore) GetUser(_ context.Context, id string) (*domain.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	u, ok := f.users[id]
	if !ok {
		return nil, fmt.Errorf("user %s: %w", id, domain.ErrNotFound)
	}
	cp := *u
	return &cp, nil
}

func (f *fakeStore) PutUser(_ context.Context, u *domain.User) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	if old, ok := f.users[u.ID]; ok && u.SuppressedEmail == "" && old.SuppressedEmail == u.Email {
		u.SuppressedEmail = old.SuppressedEmail
	}
	u.UpdatedAt = time.Now()
	cp := *u
	f.users[u.ID] = &cp
	f.writes++
	return nil
}

func (f *fakeStore) SavePushSubscription(_ context.Context, userID string, sub domain.PushSubscription) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return false, f.fail
	}
	if f.subs[userID] == nil {
		f.subs[userID] = map[string]domain.PushSubscription{}
	}
	_, existed := f.subs[userID][sub.ID]
	f.subs[userID][sub.ID] = sub
	f.writes++
	return !existed, nil
}

func (f *fakeStore) ListPushSubscriptions(_ context.Context, userID string) ([]domain.PushSubscription, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	out := slices.Collect(maps.Values(f.subs[userID]))
	slices.SortFunc(out, func(a, b domain.PushSubscription) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (f *fakeStore) DeletePushSubscription(_ context.Context, userID, subID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	if _, ok := f.subs[userID][subID]; !ok {
		return fmt.Errorf("push subscription %s: %w", subID, domain.ErrNotFound)
	}
	delete(f.subs[userID], subID)
	f.writes++
	return nil
}

func (f *fakeStore) GetPreferences(_ context.Context, userID string) (domain.Preferences, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	out := domain.Preferences{}
	for t, m := range f.prefs[userID] {
		out[t] = maps.Clone(m)
	}
	return out, nil
}

func (f *fakeStore) MergePreferences(_ context.Context, userID string, changes map[string]map[domain.Channel]*bool) (domain.Preferences, error) {
	f.mu.Lock()
	if f.fail != nil {
		f.mu.Unlock()
		return nil, f.fail
	}
	p := f.prefs[userID]
	if p == nil {
		p = domain.Preferences{}
		f.prefs[userID] = p
	}
	for t, m := range changes {
		for c, on := range m {
			if on == nil {
				delete(p[t], c)
				continue
			}
			if p[t] == nil {
				p[t] = map[domain.Channel]bool{}
			}
			p[t][c] = *on
		}
		if len(p[t]) == 0 {
			delete(p, t)
		}
	}
	f.writes++
	f.mu.Unlock()
	return f.GetPreferences(context.Background(), userID)
}

func (f *fakeStore) GetBudget(_ context.Context, userID string) (*domain.Budget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	b, ok := f.budgets[userID]
	if !ok {
		return nil, nil
	}
	return &b, nil
}

func (f *fakeStore) SetBudget(_ context.Context, userID string, b *domain.Budget) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	if b == nil {
		delete(f.budgets, userID)
	} else {
		f.budgets[userID] = *b
	}
	f.writes++
	return nil
}

func (f *fakeStore) writeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// testNow is the handler's clock in tests.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type testAPI struct {
	h             *Handler
	notifications *NotificationsHandler
	users         *UsersHandler
	store         *fakeStore
	ids           int
	mu            sync.Mutex
}

func newTestAPI(t testing.TB) *testAPI {
	t.Helper()
	ta := &testAPI{store: newFakeStore()}
	cat, now, log := catalog.MustLoad(), func() time.Time { return testNow }, slog.New(slog.NewTextHandler(io.Discard, nil))
	ta.notifications = NewNotifications(NotificationsDeps{Notifications: ta.store, Catalog: cat, Now: now, Log: log,
		NewID: func() string {
			ta.mu.Lock()
			defer ta.mu.Unlock()
			ta.ids++
			var b [16]byte
			b[0], b[1] = byte(ta.ids>>8), byte(ta.ids)
			return NewRandomID(b[:])
		},
	})
	ta.users = NewUsers(UsersDeps{Users: ta.store, PushSubscriptions: ta.store, Preferences: ta.store, Catalog: cat, Now: now, Log: log})
	ta.h = New(Deps{Log: log, Notifications: ta.notifications, Users: ta.users,
		Me: NewMe(MeDeps{Users: ta.store, Preferences: ta.store, Budgets: ta.store, Catalog: cat, Log: log})})
	return ta
}

// apiCall describes one API Gateway request.
type apiCall struct {
	route   string            // route key, e.g. "POST /v1/notifications"
	params  map[string]string // path parameters
	query   map[string]string // query string parameters
	body    string
	headers map[string]string
	caller  string          // IAM caller (user name); "" for none
	arn     string          // IAM principal ARN, instead of caller
	jwtSub  string          // JWT subject instead of IAM
	ctx     context.Context // the invocation's context; Background when nil
}

func (ta *testAPI) do(t testing.TB, c apiCall) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return ta.doRaw(t, c, false)
}

// doRaw is do with the body flagged as base64 (API Gateway does that for
// bodies it does not consider text).
func (ta *testAPI) doRaw(t testing.TB, c apiCall, base64Body bool) events.APIGatewayV2HTTPResponse {
	t.Helper()
	ev := events.APIGatewayV2HTTPRequest{RouteKey: c.route, RawPath: rawPath(c.route, c.params), Body: c.body, Headers: map[string]string{}, PathParameters: c.params, QueryStringParameters: c.query, IsBase64Encoded: base64Body}
	ev.RequestContext.HTTP.Method, _, _ = strings.Cut(c.route, " ")
	if c.body != "" {
		ev.Headers["content-type"] = "application/json" // as every client sends it; a test may override or remove it
	}
	for k, v := range c.headers {
		ev.Headers[strings.ToLower(k)] = v
		if v == "" && strings.EqualFold(k, "Content-Type") { // "": send none
			delete(ev.Headers, "content-type")
		}
	}
	switch {
	case c.jwtSub != "":
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": c.jwtSub}},
		}
	case c.caller != "" || c.arn != "":
		arn := c.arn
		if arn == "" {
			arn = "arn:aws:iam::123456789012:user/" + c.caller
		}
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: arn},
		}
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	resp, err := ta.h.Handle(ctx, ev)
	if err != nil {
		t.Fatalf("%s: handler error %v", c.route, err)
	}
	return resp
}

// rawPath is the raw path API Gateway sends for a route key and its path
// parameters (each escaped as a client sends it).
func rawPath(routeKey string, params map[string]string) string {
	_, path, _ := strings.Cut(routeKey, " ")
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if name, ok := pathVariable(s); ok {
			segs[i] = url.PathEscape(params[name])
		}
	}
	return strings.Join(segs, "/")
}

// post sends a notification as caller "svc".
func (ta *testAPI) post(t testing.TB, body string, headers ...string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	c := apiCall{route: "POST /v1/notifications", body: body, caller: "svc", headers: map[string]string{}}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		c.headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return ta.do(t, c)
}

type problemBody struct {
	Type, Title, Detail, Code, Pointer, Header, Parameter string
	Status                                                int
}

func decodeProblem(t testing.TB, resp events.APIGatewayV2HTTPResponse) problemBody {
	t.Helper()
	if ct := resp.Headers["Content-Type"]; ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q for status %d (%s)", ct, resp.StatusCode, resp.Body)
	}
	var p problemBody
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		t.Fatalf("problem body %q: %v", resp.Body, err)
	}
	if p.Status != resp.StatusCode || p.Code == "" || p.Type != problemTypeBase+p.Code || p.Title == "" {
		t.Fatalf("malformed problem for %d: %s", resp.StatusCode, resp.Body)
	}
	return p
}

func decodeBody[T any](t testing.TB, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

const validInvoice = `{"type":"invoice.payment_failed","recipient":{"userId":"u1","email":"u1@example.com"},"data":{"invoiceUrl":"https://example.com/i/9"}}`

// delivery is the stored delivery (the zero one when there is none).
func (f *fakeStore) delivery(id string, ch domain.Channel) domain.Delivery {
	d, _ := f.deliveries.Get(id, ch)
	return d
}
