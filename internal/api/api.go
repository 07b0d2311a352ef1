// Package api is Herald's HTTP API behind API Gateway (HTTP API, payload 2.0).
// API Gateway matches routes and authenticates: service routes with IAM
// (SigV4), user routes with a JWT authorizer. One handler per feature
// (notifications, campaigns, users, inbox, announcements, me, unsubscribe)
// serves its routes with the collaborators they need; the router (Handler)
// joins their route tables, dispatches on the route key and reads the
// identity from the request context; errors are RFC 9457 problem documents
// mapped in one place.
package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/metrics"
)

// Deps are the router's: the feature handlers it composes, each wired with
// what its routes need (a nil one serves its routes without collaborators:
// the route list alone, for the spec tests), and what every route shares.
// Each feature declares the store interface it needs next to its handlers
// (e.g. NotificationStore); the DynamoDB store implements them all.
type Deps struct {
	Notifications *NotificationsHandler
	Campaigns     *CampaignsHandler
	Users         *UsersHandler
	Inbox         *InboxHandler
	Announcements *AnnouncementsHandler
	Me            *MeHandler
	Unsubscribe   *UnsubscribeHandler
	Topics        *TopicsHandler

	// Log is where the router logs a response it cannot encode.
	Log *slog.Logger
	// Metrics counts the intake requests the router refuses before their
	// route runs (Rejected) and is flushed once per invocation: give the
	// notification routes the same recorder. Nil records nothing.
	Metrics metrics.Recorder
}

// Handler is the API Lambda handler: the router over the feature handlers'
// routes, and the concerns every route shares (authentication, media type
// and body checks, problem documents, encoding, the metrics flush).
type Handler struct {
	routes  map[string]route
	log     *slog.Logger
	metrics metrics.Recorder
}

type route func(ctx context.Context, req *request) response

// feature is one room of the API: a handler and the routes it serves.
type feature interface {
	routes() map[string]route
}

// request is an API Gateway request with its authenticated identity.
type request struct {
	events.APIGatewayV2HTTPRequest
	caller  string // service callers: normalised IAM principal
	subject string // user routes: JWT sub
}

type response struct {
	status  int
	body    any
	headers map[string]string
}

// New wires the API handler: the router over d's feature handlers.
func New(d Deps) *Handler {
	h := &Handler{routes: map[string]route{}, log: d.Log, metrics: d.Metrics}
	if h.metrics == nil {
		h.metrics = metrics.Nop{}
	}
	for _, f := range d.features() {
		maps.Copy(h.routes, f.routes())
	}
	return h
}

// features are the feature handlers the router composes, a handler without
// collaborators in place of a nil one.
func (d Deps) features() []feature {
	return []feature{
		cmp.Or(d.Notifications, NewNotifications(NotificationsDeps{})),
		cmp.Or(d.Campaigns, NewCampaigns(CampaignsDeps{})),
		cmp.Or(d.Users, NewUsers(UsersDeps{})),
		cmp.Or(d.Inbox, NewInbox(InboxDeps{})),
		cmp.Or(d.Announcements, NewAnnouncements(AnnouncementsDeps{})),
		cmp.Or(d.Me, NewMe(MeDeps{})),
		cmp.Or(d.Unsubscribe, NewUnsubscribe(UnsubscribeDeps{})),
		cmp.Or(d.Topics, NewTopics(TopicsDeps{})),
	}
}

// Routes lists the route keys the handler serves (for the spec and template tests).
func (h *Handler) Routes() []string {
	out := make([]string, 0, len(h.routes))
	for k := range h.routes {
		out = append(out, k)
	}
	return out
}

// Handle serves one API Gateway request.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	defer h.metrics.Flush(ctx)
	req := &request{APIGatewayV2HTTPRequest: ev}
	var resp response
	if r, ok := h.routes[ev.RouteKey]; !ok || !routeFits(ev) {
		resp = problemResponse(noRoute())
	} else if p := authenticate(req); p != nil && !isPublicRoute(ev.RouteKey) {
		resp = problemResponse(p)
	} else if p := checkMediaType(ev); p != nil {
		resp = problemResponse(p)
	} else if p := checkNoBody(ev); p != nil {
		resp = problemResponse(p)
	} else {
		resp = r(ctx, req)
	}
	if intakeRoutes[ev.RouteKey] {
		countRejected(ctx, h.metrics, resp)
	}
	return h.encode(ctx, ev, resp), nil
}

// authenticate reads the identity API Gateway established. A request without
// one never reaches a handler (defence in depth behind the gateway's auth).
func authenticate(req *request) *Problem {
	a := req.RequestContext.Authorizer
	if a != nil && a.JWT != nil {
		if sub, _ := a.JWT.Claims["sub"]; sub != "" {
			req.subject = sub
			return nil
		}
	}
	if a != nil && a.IAM != nil && a.IAM.UserARN != "" {
		req.caller = normalizePrincipal(a.IAM.UserARN)
		return nil
	}
	return &Problem{Status: http.StatusUnauthorized, Code: "unauthenticated", Title: "Authentication required"}
}

// normalizePrincipal maps an assumed-role session ARN to its role so that a
// service keeps one identity across sessions:
// arn:aws:sts::1:assumed-role/Svc/session → arn:aws:sts::1:assumed-role/Svc.
func normalizePrincipal(arn string) string {
	if i := strings.Index(arn, ":assumed-role/"); i >= 0 {
		rest := arn[i+len(":assumed-role/"):]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return arn[:i+len(":assumed-role/")+j]
		}
	}
	return arn
}

// rawBody is a response body sent as it is (an HTML page); the route sets
// its Content-Type.
type rawBody []byte

func (h *Handler) encode(ctx context.Context, ev events.APIGatewayV2HTTPRequest, r response) events.APIGatewayV2HTTPResponse {
	headers := map[string]string{"Content-Type": "application/json"}
	if _, ok := r.body.(*Problem); ok {
		headers["Content-Type"] = "application/problem+json"
	}
	maps.Copy(headers, r.headers)
	var body []byte
	if raw, ok := r.body.(rawBody); ok {
		body = raw
	} else if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			h.log.ErrorContext(ctx, "encode response", "route", ev.RouteKey, "error", err)
			r.status, body = http.StatusInternalServerError, []byte(`{"type":"about:blank","title":"Internal error","status":500,"code":"internal"}`)
			headers["Content-Type"] = "application/problem+json"
		}
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: r.status, Headers: headers, Body: string(body)}
}

// deadlineReserve is the time an invocation keeps back: a write not started
// by then answers a retryable 503, so a batch returns every item's outcome
// instead of being killed at the function's timeout with none.
const deadlineReserve = 1500 * time.Millisecond

// timeoutProblem answers work the invocation had no time left for.
func timeoutProblem() *Problem {
	return &Problem{Status: http.StatusServiceUnavailable, Code: "timeout", Title: "Timed out",
		Detail: "the request ran out of time; retry it with the same idempotency key"}
}

// statusFor maps domain errors to HTTP statuses: the one place that does.
func statusFor(err error) int {
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, domain.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
