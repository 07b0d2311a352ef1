package smssink

// SNS mobile push, as much of it as Herald uses: platform applications (made
// by the runner, as an operator makes them outside the stack), their
// endpoints (CreatePlatformEndpoint, GetEndpointAttributes,
// SetEndpointAttributes, DeleteEndpoint) and Publish to an endpoint
// (TargetArn). Semantics follow the SNS API reference and its mobile token
// management guide:
//   - CreatePlatformEndpoint is idempotent: the same token with the same
//     attributes (CustomUserData) answers the existing endpoint's ARN, even
//     a disabled one; the same token with other attributes fails with
//     InvalidParameter "Invalid parameter: Token Reason: Endpoint <arn>
//     already exists with the same Token, but different attributes.";
//   - Publish to a disabled endpoint fails with EndpointDisabled ("Endpoint
//     is disabled"); to one that does not exist with InvalidParameter
//     ("Invalid parameter: TargetArn Reason: No endpoint found for the target
//     arn specified"); DeleteEndpoint of one that does not exist succeeds;
//   - a publish needs MessageStructure json with the platform's key (APNS,
//     APNS_SANDBOX, GCM) or "default", and a platform payload of at most
//     4096 bytes that is a JSON object.
// Every accepted publish is captured with its payload parsed.

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MaxMobilePayload is the platform payload limit the sink enforces (APNs and
// FCM: 4 KB).
const MaxMobilePayload = 4096

// platformKeys: the SNS platform of an application ARN → the key of its
// payload in a MessageStructure json message, and the platform name Herald
// uses.
var platformKeys = map[string]struct{ key, name string }{
	"APNS": {"APNS", "apns"}, "APNS_SANDBOX": {"APNS_SANDBOX", "apns_sandbox"}, "GCM": {"GCM", "fcm"},
}

// MobileMessage is one captured mobile publish.
type MobileMessage struct {
	At          time.Time       `json:"at"`
	Platform    string          `json:"platform"` // apns, apns_sandbox, fcm
	EndpointARN string          `json:"endpointArn"`
	DeviceID    string          `json:"deviceId,omitempty"` // from the endpoint's CustomUserData
	UserID      string          `json:"userId,omitempty"`
	Payload     json.RawMessage `json:"payload"`
	// Attributes are the publish's message attributes (TTL, APNs push
	// type and priority).
	Attributes map[string]string `json:"attributes,omitempty"`
	MessageID  string            `json:"messageId"`
}

type platformApp struct {
	arn      string
	platform string // APNS, APNS_SANDBOX, GCM
}

type endpoint struct {
	arn        string
	app        *platformApp
	attributes map[string]string // Token, CustomUserData, Enabled
}

// AddPlatformApplication serves a platform application with this ARN
// (arn:aws:sns:<region>:<account>:app/<APNS|APNS_SANDBOX|GCM>/<name>).
func (s *Sink) AddPlatformApplication(arn string) error {
	platform, ok := appPlatform(arn)
	if !ok {
		return fmt.Errorf("platform application ARN %q: want …:app/<APNS|APNS_SANDBOX|GCM>/<name>", arn)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apps == nil {
		s.apps, s.endpoints = map[string]*platformApp{}, map[string]*endpoint{}
	}
	if _, ok := s.apps[arn]; !ok {
		s.apps[arn] = &platformApp{arn: arn, platform: platform}
	}
	return nil
}

func appPlatform(arn string) (string, bool) {
	_, rest, ok := strings.Cut(arn, ":app/")
	if !ok || !strings.HasPrefix(arn, "arn:") {
		return "", false
	}
	platform, name, ok := strings.Cut(rest, "/")
	if _, known := platformKeys[platform]; !ok || !known || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return platform, true
}

// MobileMessages returns the captured mobile publishes, newest first.
func (s *Sink) MobileMessages() []MobileMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]MobileMessage, len(s.mobile))
	for i, m := range s.mobile {
		out[len(s.mobile)-1-i] = m
	}
	return out
}

// Endpoints returns the ARNs of the endpoints of an application.
func (s *Sink) Endpoints(appARN string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for arn, e := range s.endpoints {
		if e.app.arn == appARN {
			out = append(out, arn)
		}
	}
	sort.Strings(out)
	return out
}

// EndpointAttributes returns an endpoint's attributes (nil: no endpoint).
func (s *Sink) EndpointAttributes(arn string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[arn]
	if !ok {
		return nil
	}
	return copyMap(e.attributes)
}

// DisableEndpoint sets an endpoint's Enabled to false, as SNS does when the
// platform reports its token invalid; it reports whether the endpoint exists.
func (s *Sink) DisableEndpoint(arn string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[arn]
	if ok {
		e.attributes["Enabled"] = "false"
	}
	return ok
}

// MobileHandler serves the captured mobile publishes:
//
//	GET    → {"messages":[{"at","platform","endpointArn","deviceId","userId","payload",…}, …]} newest first
//	DELETE → forget them (endpoints stay)
func (s *Sink) MobileHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"messages": s.MobileMessages()})
		case http.MethodDelete:
			s.mu.Lock()
			s.mobile = nil
			s.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Allow", "GET, DELETE")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

func notFound(message string) *apiError {
	return &apiError{status: http.StatusNotFound, errorType: "Sender", code: "NotFound", message: message}
}

// attributeMap reads the query protocol's Attributes.entry.N.key/value.
func attributeMap(form map[string][]string) (map[string]string, *apiError) {
	keys, values := map[int]string{}, map[int]string{}
	for k, v := range form {
		rest, ok := strings.CutPrefix(k, "Attributes.entry.")
		if !ok || len(v) == 0 {
			continue
		}
		idx, field, _ := strings.Cut(rest, ".")
		n, err := strconv.Atoi(idx)
		if err != nil || n < 1 {
			return nil, invalidParameter("Invalid parameter: Attributes")
		}
		switch field {
		case "key":
			keys[n] = v[0]
		case "value":
			values[n] = v[0]
		default:
			return nil, invalidParameter("Invalid parameter: Attributes")
		}
	}
	out := map[string]string{}
	for n, k := range keys {
		switch k {
		case "Token", "CustomUserData", "Enabled":
		default:
			return nil, invalidParameter("Invalid parameter: Attributes Reason: unknown attribute " + k)
		}
		if k == "Enabled" && values[n] != "true" && values[n] != "false" {
			return nil, invalidParameter("Invalid parameter: Attributes Reason: Enabled must be true or false")
		}
		out[k] = values[n]
	}
	return out, nil
}

type createEndpointResponse struct {
	XMLName     xml.Name `xml:"CreatePlatformEndpointResponse"`
	Namespace   string   `xml:"xmlns,attr"`
	EndpointArn string   `xml:"CreatePlatformEndpointResult>EndpointArn"`
	RequestID   string   `xml:"ResponseMetadata>RequestId"`
}

func (s *Sink) createPlatformEndpoint(form map[string][]string, requestID string) (any, *apiError) {
	appARN, token := firstValue(form, "PlatformApplicationArn"), firstValue(form, "Token")
	attrs, apiErr := attributeMap(form)
	if apiErr != nil {
		return nil, apiErr
	}
	if _, ok := form["CustomUserData"]; ok {
		attrs["CustomUserData"] = firstValue(form, "CustomUserData")
	}
	switch {
	case token == "":
		return nil, invalidParameter("Invalid parameter: Token Reason: cannot be empty")
	case len(attrs["CustomUserData"]) >= 2048:
		return nil, invalidParameter("Invalid parameter: CustomUserData Reason: must be less than 2KB")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	app, ok := s.apps[appARN]
	if !ok {
		return nil, notFound("PlatformApplication does not exist")
	}
	if app.platform != "GCM" && !isHex(token) {
		return nil, invalidParameter("Invalid parameter: Token Reason: iOS device tokens must be hexadecimal")
	}
	for _, e := range s.endpoints {
		if e.app != app || e.attributes["Token"] != token {
			continue
		}
		for k, v := range attrs {
			if k != "Token" && e.attributes[k] != v {
				return nil, invalidParameter("Invalid parameter: Token Reason: Endpoint " + e.arn + " already exists with the same Token, but different attributes.")
			}
		}
		return createEndpointResponse{Namespace: snsNamespace, EndpointArn: e.arn, RequestID: requestID}, nil
	}
	e := &endpoint{arn: strings.Replace(appARN, ":app/", ":endpoint/", 1) + "/" + newUUID(), app: app,
		attributes: map[string]string{"Token": token, "Enabled": "true", "CustomUserData": attrs["CustomUserData"]}}
	if v, ok := attrs["Enabled"]; ok {
		e.attributes["Enabled"] = v
	}
	s.endpoints[e.arn] = e
	return createEndpointResponse{Namespace: snsNamespace, EndpointArn: e.arn, RequestID: requestID}, nil
}

func isHex(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return (r < '0' || r > '9') && (r < 'a' || r > 'f') && (r < 'A' || r > 'F')
	})
}

type getEndpointAttributesResponse struct {
	XMLName   xml.Name    `xml:"GetEndpointAttributesResponse"`
	Namespace string      `xml:"xmlns,attr"`
	Entries   []attrEntry `xml:"GetEndpointAttributesResult>Attributes>entry"`
	RequestID string      `xml:"ResponseMetadata>RequestId"`
}

type attrEntry struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func (s *Sink) getEndpointAttributes(form map[string][]string, requestID string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[firstValue(form, "EndpointArn")]
	if !ok {
		return nil, notFound("Endpoint does not exist")
	}
	keys := make([]string, 0, len(e.attributes))
	for k := range e.attributes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	resp := getEndpointAttributesResponse{Namespace: snsNamespace, RequestID: requestID}
	for _, k := range keys {
		resp.Entries = append(resp.Entries, attrEntry{Key: k, Value: e.attributes[k]})
	}
	return resp, nil
}

type emptyResponse struct {
	XMLName   xml.Name
	Namespace string `xml:"xmlns,attr"`
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

func (s *Sink) setEndpointAttributes(form map[string][]string, requestID string) (any, *apiError) {
	attrs, apiErr := attributeMap(form)
	if apiErr != nil {
		return nil, apiErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[firstValue(form, "EndpointArn")]
	if !ok {
		return nil, notFound("Endpoint does not exist")
	}
	if t, ok := attrs["Token"]; ok {
		for _, other := range s.endpoints {
			if other != e && other.app == e.app && other.attributes["Token"] == t {
				return nil, invalidParameter("Invalid parameter: Token Reason: Endpoint " + other.arn + " already exists with the same Token")
			}
		}
	}
	for k, v := range attrs {
		e.attributes[k] = v
	}
	return emptyResponse{XMLName: xml.Name{Local: "SetEndpointAttributesResponse"}, Namespace: snsNamespace, RequestID: requestID}, nil
}

func (s *Sink) deleteEndpoint(form map[string][]string, requestID string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.endpoints, firstValue(form, "EndpointArn"))
	return emptyResponse{XMLName: xml.Name{Local: "DeleteEndpointResponse"}, Namespace: snsNamespace, RequestID: requestID}, nil
}

// publishMobile is Publish with a TargetArn: to a platform endpoint.
func (s *Sink) publishMobile(form map[string][]string, requestID string) (any, *apiError) {
	target := firstValue(form, "TargetArn")
	if firstValue(form, "MessageStructure") != "json" {
		return nil, invalidParameter("Invalid parameter: the local SNS supports publishing to an endpoint with MessageStructure json only")
	}
	var perProtocol map[string]string
	if err := json.Unmarshal([]byte(firstValue(form, "Message")), &perProtocol); err != nil {
		return nil, invalidParameter("Invalid parameter: Message Structure - JSON message body failed to parse")
	}
	attrs, apiErr := parseMessageAttributes(form)
	if apiErr != nil {
		return nil, apiErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[target]
	if !ok {
		return nil, invalidParameter("Invalid parameter: TargetArn Reason: No endpoint found for the target arn specified")
	}
	if e.attributes["Enabled"] != "true" {
		return nil, &apiError{status: http.StatusBadRequest, errorType: "Sender", code: "EndpointDisabled", message: "Endpoint is disabled"}
	}
	pk := platformKeys[e.app.platform]
	payload, ok := perProtocol[pk.key]
	if !ok {
		if payload, ok = perProtocol["default"]; !ok {
			return nil, invalidParameter("Invalid parameter: Message Structure - No default entry in JSON message body")
		}
	}
	if len(payload) > MaxMobilePayload {
		return nil, invalidParameter(fmt.Sprintf("Invalid parameter: Message too long for %s (%d bytes, at most %d)", e.app.platform, len(payload), MaxMobilePayload))
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(payload), &obj); err != nil {
		return nil, invalidParameter("Invalid parameter: the " + pk.key + " payload is not a JSON object")
	}
	var owner struct {
		UserID   string `json:"userId"`
		DeviceID string `json:"deviceId"`
	}
	_ = json.Unmarshal([]byte(e.attributes["CustomUserData"]), &owner)
	msg := MobileMessage{At: s.now().UTC(), Platform: pk.name, EndpointARN: e.arn, DeviceID: owner.DeviceID, UserID: owner.UserID,
		Payload: json.RawMessage(payload), Attributes: attrs, MessageID: newUUID()}
	s.mobile = append(s.mobile, msg)
	return publishResponse{Namespace: snsNamespace, MessageID: msg.MessageID, RequestID: requestID}, nil
}
