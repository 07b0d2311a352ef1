package api

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// The route tables of the feature handlers, in one file: route key (method
// and path, as in openapi.yaml and template.yaml) → handler method. Each
// handler serves its own table; the router (New) joins them. Service routes
// are wrapped in service (IAM caller required); inbox routes check the
// token's subject against the path's user themselves (owner); announcement
// routes are service routes that answer their own 403; public routes are
// listed in publicRoutes.

// routes of the notifications (service).
func (h *NotificationsHandler) routes() map[string]route {
	return map[string]route{
		"POST /v1/notifications":               service(h.createNotification),
		"POST /v1/notifications/batch":         service(h.createNotificationBatch),
		"GET /v1/notifications/{id}":           service(h.getNotification),
		"DELETE /v1/notifications/{id}":        service(h.cancelNotification),
		"GET /v1/users/{userId}/notifications": service(h.listHistory),
	}
}

// routes of the campaigns (service).
func (h *CampaignsHandler) routes() map[string]route {
	return map[string]route{
		"POST /v1/campaigns":                 service(h.createCampaign),
		"GET /v1/campaigns/{id}":             service(h.getCampaign),
		"DELETE /v1/campaigns/{id}":          service(h.cancelCampaign),
		"POST /v1/campaigns/{id}/recipients": service(h.addRecipients),
		"POST /v1/campaigns/{id}/start":      service(h.startCampaign),
	}
}

// routes of the users, their push subscriptions, devices and preferences
// (service), and the Web Push configuration for browsers (user token).
func (h *UsersHandler) routes() map[string]route {
	return map[string]route{
		"PUT /v1/users/{userId}":                                        service(h.putUser),
		"GET /v1/users/{userId}":                                        service(h.getUser),
		"POST /v1/users/{userId}/push-subscriptions":                    service(h.createPushSubscription),
		"DELETE /v1/users/{userId}/push-subscriptions/{subscriptionId}": service(h.deletePushSubscription),
		"GET /v1/users/{userId}/devices":                                service(h.listDevices),
		"POST /v1/users/{userId}/devices":                               service(h.createDevice),
		"DELETE /v1/users/{userId}/devices/{deviceId}":                  service(h.deleteDevice),
		"GET /v1/users/{userId}/preferences":                            service(h.getPreferences),
		"PUT /v1/users/{userId}/preferences":                            service(h.putPreferences),
		"GET /v1/push/config":                                           h.pushConfig,
	}
}

// routes of the inbox (user token; the path's user must be the token's
// subject).
func (h *InboxHandler) routes() map[string]route {
	return map[string]route{
		"GET /v1/users/{userId}/inbox":               h.listInbox,
		"GET /v1/users/{userId}/inbox/unread-count":  h.unreadCount,
		"POST /v1/users/{userId}/inbox/{id}/read":    h.markRead,
		"POST /v1/users/{userId}/inbox/read-all":     h.markAllRead,
		"POST /v1/users/{userId}/inbox/{id}/archive": h.archive,
		"POST /v1/users/{userId}/presence":           h.postPresence,
	}
}

// routes of the announcements (service; the handlers answer a user's token
// with 403).
func (h *AnnouncementsHandler) routes() map[string]route {
	return map[string]route{
		"POST /v1/announcements": h.createAnnouncement,
		"GET /v1/announcements":  h.listAnnouncements,
	}
}

// routes of the user's own preference center (user token; the user is the
// token's subject, there is no userId in the path).
func (h *MeHandler) routes() map[string]route {
	return map[string]route{
		"GET /v1/me/preferences": h.getMyPreferences,
		"PUT /v1/me/preferences": h.putMyPreferences,
	}
}

// routes of the topic subscriptions (service) and of the user's own
// topics (user token; the user is the token's subject).
func (h *TopicsHandler) routes() map[string]route {
	return map[string]route{
		"PUT /v1/topics/{topic}/subscribers":             service(h.subscribe),
		"GET /v1/topics/{topic}/subscribers":             service(h.listSubscribers),
		"DELETE /v1/topics/{topic}/subscribers/{userId}": service(h.unsubscribe),
		"GET /v1/users/{userId}/topics":                  service(forUser(pathUserID, h.userTopics)),
		"PUT /v1/users/{userId}/topics/{topic}":          service(forUser(pathUserID, h.mute)),
		"GET /v1/me/topics":                              forUser(me, h.userTopics),
		"PUT /v1/me/topics/{topic}":                      forUser(me, h.mute),
	}
}

// routes of the one-click unsubscribe links (public).
func (h *UnsubscribeHandler) routes() map[string]route {
	return map[string]route{
		"GET /v1/unsubscribe":  h.showUnsubscribe,
		"POST /v1/unsubscribe": h.confirmUnsubscribe,
	}
}

// publicRoutes are served without an authorizer (Auth: NONE in the
// template): the signed token in the URL is their authentication.
var publicRoutes = map[string]bool{
	"GET /v1/unsubscribe":  true,
	"POST /v1/unsubscribe": true,
}

func isPublicRoute(routeKey string) bool { return publicRoutes[routeKey] }

// bodyRoutes are the routes that take a request body: a JSON object decoded
// with decodeStrict (or, on formRoutes, a URL-encoded form). Every other
// POST, PUT or PATCH route refuses a body (400 unexpected_body) before its
// handler runs, so a handler that reads a body must be listed here; the
// hostile-body test (routes from template.yaml, bodies from openapi.yaml)
// runs on every POST, PUT and PATCH route.
var bodyRoutes = map[string]bool{
	"POST /v1/notifications":                     true,
	"POST /v1/notifications/batch":               true,
	"POST /v1/campaigns":                         true,
	"POST /v1/campaigns/{id}/recipients":         true,
	"PUT /v1/users/{userId}":                     true,
	"POST /v1/users/{userId}/push-subscriptions": true,
	"POST /v1/users/{userId}/devices":            true,
	"PUT /v1/users/{userId}/preferences":         true,
	"PUT /v1/me/preferences":                     true,
	"PUT /v1/topics/{topic}/subscribers":         true,
	"PUT /v1/users/{userId}/topics/{topic}":      true,
	"PUT /v1/me/topics/{topic}":                  true,
	"POST /v1/announcements":                     true,
	"POST /v1/unsubscribe":                       true,
}

// checkNoBody refuses a body on a POST, PUT or PATCH route that takes none
// (a GET or DELETE body has no meaning in HTTP and is never read). An empty
// JSON object is no body: many HTTP clients send `{}` by default.
func checkNoBody(ev events.APIGatewayV2HTTPRequest) *Problem {
	method, _, _ := strings.Cut(ev.RouteKey, " ")
	if bodyRoutes[ev.RouteKey] || !takesBody(method) || saysNothing(ev) {
		return nil
	}
	return &Problem{Status: http.StatusBadRequest, Code: "unexpected_body", Title: "This route takes no body",
		Detail: "send the request without a body"}
}

// saysNothing reports whether a request's body is empty or an empty JSON
// object (JSON whitespace around and inside the braces).
func saysNothing(ev events.APIGatewayV2HTTPRequest) bool {
	body := ev.Body
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return false
		}
		body = string(b)
	}
	const jsonSpace = " \t\r\n"
	inner, open := strings.CutPrefix(strings.Trim(body, jsonSpace), "{")
	inner, closed := strings.CutSuffix(inner, "}")
	return body == "" || (open && closed && strings.Trim(inner, jsonSpace) == "")
}

// takesBody reports whether requests of method carry a body in HTTP.
func takesBody(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// intakeRoutes are the routes whose refusals count as Rejected.
var intakeRoutes = map[string]bool{"POST /v1/notifications": true, "POST /v1/notifications/batch": true}

// routeFits reports whether ev is a request API Gateway could have sent for
// its route key (defence in depth behind the gateway's exact matching): the
// method of the route key (any for ANY), path parameters that are exactly the route's
// variables, each a whole segment that is not empty, "." or "..", and a raw
// path that matches the route's path segment by segment — no trailing
// slash, empty segment or dot segment. (A direct invocation without a raw
// path, as in unit tests, skips the path comparison; API Gateway always
// sets it.)
func routeFits(ev events.APIGatewayV2HTTPRequest) bool {
	method, path, ok := strings.Cut(ev.RouteKey, " ")
	if !ok {
		return false
	}
	if m := ev.RequestContext.HTTP.Method; m != "" && m != method && method != "ANY" {
		return false
	}
	segments := strings.Split(strings.TrimPrefix(path, "/"), "/")
	vars := 0
	for _, s := range segments {
		if name, ok := pathVariable(s); ok {
			vars++
			if v, present := ev.PathParameters[strings.TrimSuffix(name, "+")]; !present || v == "" || v == "." || v == ".." {
				return false
			}
		}
	}
	if len(ev.PathParameters) != vars {
		return false
	}
	if ev.RawPath == "" {
		return true
	}
	raw, ok := strings.CutPrefix(ev.RawPath, "/")
	if !ok {
		return false
	}
	parts := strings.Split(raw, "/")
	if strings.HasSuffix(segments[len(segments)-1], "+}") && len(parts) > len(segments) {
		// A greedy variable takes the rest of the path: each of its
		// segments is checked as one of the route's would be.
		for _, p := range parts[len(segments):] {
			if d, err := url.PathUnescape(p); err != nil || d == "" || d == "." || d == ".." {
				return false
			}
		}
		parts = parts[:len(segments)]
	}
	if len(parts) != len(segments) {
		return false
	}
	for i, p := range parts {
		decoded, err := url.PathUnescape(p)
		if err != nil || decoded == "" || decoded == "." || decoded == ".." {
			return false
		}
		if _, isVar := pathVariable(segments[i]); !isVar && decoded != segments[i] {
			return false
		}
	}
	return true
}

// pathVariable returns the name of a route path segment "{name}".
func pathVariable(segment string) (string, bool) {
	if len(segment) > 2 && segment[0] == '{' && segment[len(segment)-1] == '}' {
		return segment[1 : len(segment)-1], true
	}
	return "", false
}

// noRoute is the answer to a request no route serves.
func noRoute() *Problem {
	return &Problem{Status: http.StatusNotFound, Code: "route_not_found", Title: "No such route"}
}
