package devstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/coder/websocket"
	"github.com/heraldhq/herald/internal/app"

	"github.com/heraldhq/herald/internal/devstack/iam"
	"github.com/heraldhq/herald/internal/live"
)

// WebSocketRouteHandler is a WebSocket route's function (Lambda proxy).
type WebSocketRouteHandler func(context.Context, events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error)

// WebSocketAuthorizer is a Lambda REQUEST authorizer.
type WebSocketAuthorizer func(context.Context, events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error)

// API Gateway's WebSocket limits the runner enforces as AWS does.
const (
	wsMaxMessage = 128 << 10 // a message; larger closes with 1009
	wsMaxFrame   = 32 << 10  // a management post must fit one frame
)

// wsGateway emulates an API Gateway WebSocket API stage from the template:
// $connect with its Lambda REQUEST authorizer (identity sources checked
// first: missing → 401 without invoking it; the function's "Unauthorized"
// → 401; a policy not allowing the connect → 403), the route functions
// ($connect, $disconnect, $default; route selection on the message's
// action), the connection limits (2 hours, 10 minutes idle, 128 KB a
// message, on the stack's clock) and the management endpoint
// <stage>/@connections/{id} (POST, GET, DELETE; 410 for a gone connection).
type wsGateway struct {
	apiID, stage string
	// identity is the authorizer's query-string identity sources.
	identity     []string
	headerIdents []string
	authorizer   WebSocketAuthorizer
	authTimeout  time.Duration
	authInvoke   func(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error
	routes       map[string]wsRoute
	now          func() time.Time
	log          *slog.Logger
	running      context.Context

	mu    sync.Mutex
	conns map[string]*wsConn
	wg    sync.WaitGroup
}

type wsRoute struct {
	handler WebSocketRouteHandler
	timeout time.Duration
	invoke  func(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error
	auth    bool
}

type wsConn struct {
	id          string
	ws          *websocket.Conn
	authCtx     map[string]any
	connectedAt time.Time
	sourceIP    string
	userAgent   string

	mu         sync.Mutex
	lastActive time.Time
	writeMu    sync.Mutex
	closeOnce  sync.Once
	done       chan struct{}
}

var lambdaURIFunction = regexp.MustCompile(`\$\{getatt:([A-Za-z0-9]+)\.Arn\}`)

// newWSGateway builds the WebSocket API of the template (nil when it has
// none) with the runner's route functions and authorizers by logical id.
func (s *Stack) newWSGateway(routeFns map[string]WebSocketRouteHandler, authFns map[string]WebSocketAuthorizer, timeouts map[string]time.Duration) (*wsGateway, error) {
	var apiID string
	for id, a := range s.Template.GetAllApiGatewayV2ApiResources() {
		if aws.ToString(a.ProtocolType) == "WEBSOCKET" {
			if apiID != "" {
				return nil, fmt.Errorf("the local runner serves one WebSocket API; the template has %s and %s", apiID, id)
			}
			apiID = id
			if e := aws.ToString(a.RouteSelectionExpression); e != "$request.body.action" {
				return nil, fmt.Errorf("%s: the local runner selects routes by $request.body.action, not %q", id, e)
			}
		}
	}
	if apiID == "" {
		return nil, nil
	}
	apiRef := "${ref:" + apiID + "}"
	physical, err := s.Resources.Resolve(apiRef)
	if err != nil {
		return nil, err
	}
	g := &wsGateway{apiID: physical, routes: map[string]wsRoute{}, now: s.Clock.Now, log: s.log, running: s.running, conns: map[string]*wsConn{}}
	for id, st := range s.Template.GetAllApiGatewayV2StageResources() {
		if st.ApiId == apiRef {
			if g.stage != "" {
				return nil, fmt.Errorf("%s: the local runner serves one stage of %s", id, apiID)
			}
			g.stage = st.StageName
		}
	}
	if g.stage == "" {
		return nil, fmt.Errorf("%s has no stage", apiID)
	}
	integrations := map[string]string{} // "integrations/${ref:X}" → function
	for id, in := range s.Template.GetAllApiGatewayV2IntegrationResources() {
		m := lambdaURIFunction.FindStringSubmatch(aws.ToString(in.IntegrationUri))
		if in.ApiId != apiRef || in.IntegrationType != "AWS_PROXY" || m == nil {
			return nil, fmt.Errorf("%s: the local runner plays AWS_PROXY Lambda integrations only", id)
		}
		integrations["integrations/${ref:"+id+"}"] = m[1]
	}
	authorizers := map[string]string{}
	for id, a := range s.Template.GetAllApiGatewayV2AuthorizerResources() {
		m := lambdaURIFunction.FindStringSubmatch(aws.ToString(a.AuthorizerUri))
		if a.ApiId != apiRef || m == nil {
			continue
		}
		authorizers["${ref:"+id+"}"] = m[1]
		for _, src := range a.IdentitySource {
			switch {
			case strings.HasPrefix(src, "route.request.querystring."):
				g.identity = append(g.identity, strings.TrimPrefix(src, "route.request.querystring."))
			case strings.HasPrefix(src, "route.request.header."):
				g.headerIdents = append(g.headerIdents, strings.TrimPrefix(src, "route.request.header."))
			}
		}
	}
	for id, r := range s.Template.GetAllApiGatewayV2RouteResources() {
		if r.ApiId != apiRef {
			continue
		}
		fn, ok := integrations[aws.ToString(r.Target)]
		if !ok {
			return nil, fmt.Errorf("%s: target %q is not an integration of %s", id, aws.ToString(r.Target), apiID)
		}
		h, ok := routeFns[fn]
		if !ok {
			return nil, fmt.Errorf("%s: the local runner does not know route function %s", id, fn)
		}
		route := wsRoute{handler: h, timeout: min(timeouts[fn], 29*time.Second), invoke: s.invoke(fn)}
		if t := aws.ToString(r.AuthorizationType); t == "CUSTOM" {
			afn, ok := authorizers[aws.ToString(r.AuthorizerId)]
			if !ok || authFns[afn] == nil {
				return nil, fmt.Errorf("%s: authorizer %q is not a Lambda authorizer the runner knows", id, aws.ToString(r.AuthorizerId))
			}
			g.authorizer, g.authTimeout, g.authInvoke, route.auth = authFns[afn], min(timeouts[afn], 29*time.Second), s.invoke(afn), true
		}
		g.routes[r.RouteKey] = route
	}
	for _, k := range []string{"$connect", "$disconnect", "$default"} {
		if _, ok := g.routes[k]; !ok {
			return nil, fmt.Errorf("%s: the local runner needs a %s route", apiID, k)
		}
	}
	return g, nil
}

// routes mounts the stage and its management endpoint.
func (g *wsGateway) mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /"+g.stage, g.connect)
	mux.HandleFunc("/"+g.stage+"/@connections/{id}", g.manage)
}

func newConnectionID() string {
	var b [11]byte
	_, _ = rand.Read(b[:])
	return base64.URLEncoding.EncodeToString(b[:])[:15] + "="
}

func (g *wsGateway) requestContext(r *http.Request, routeKey, eventType, connID string, connectedAt time.Time) events.APIGatewayWebsocketProxyRequestContext {
	now := g.now()
	return events.APIGatewayWebsocketProxyRequestContext{
		AccountID: LocalAccountID, APIID: g.apiID, Stage: g.stage, RouteKey: routeKey, EventType: eventType,
		ConnectionID: connID, ConnectedAt: connectedAt.UnixMilli(), RequestID: newRequestID(), ExtendedRequestID: newRequestID(),
		MessageDirection: "IN", DomainName: r.Host, RequestTimeEpoch: now.UnixMilli(),
		RequestTime: now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
		Identity:    events.APIGatewayRequestIdentity{SourceIP: hostOnly(r.RemoteAddr), UserAgent: r.UserAgent()},
	}
}

// connect plays the WebSocket handshake: authorizer, $connect, upgrade.
func (g *wsGateway) connect(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		writeGatewayError(w, http.StatusBadRequest, "Bad Request")
		return
	}
	connID, connectedAt := newConnectionID(), g.now()
	headers := map[string]string{}
	for k, vs := range r.Header {
		headers[k] = strings.Join(vs, ",")
	}
	query := map[string]string{}
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
	}
	rc := g.requestContext(r, "$connect", "CONNECT", connID, connectedAt)
	route := g.routes["$connect"]
	var authCtx map[string]any
	if route.auth {
		var ok bool
		if authCtx, ok = g.authorize(w, r, rc, headers, query); !ok {
			return
		}
		rc.Authorizer = authCtx
	}
	resp, err := g.call(r.Context(), route, events.APIGatewayWebsocketProxyRequest{
		Headers: headers, QueryStringParameters: query, RequestContext: rc, IsBase64Encoded: false,
	})
	if err != nil {
		g.log.Error("websocket $connect function error", "error", err)
		writeGatewayError(w, http.StatusInternalServerError, "Internal server error")
		return
	}
	if resp.StatusCode/100 != 2 && resp.StatusCode != 0 {
		writeGatewayError(w, resp.StatusCode, http.StatusText(resp.StatusCode))
		return
	}
	// The upgrade and the registration happen under the lock the
	// management API reads under: a client that has seen its connection
	// open finds it established there, as on API Gateway (a DELETE right
	// after the handshake was 410 when it came between the two).
	g.mu.Lock()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // API Gateway does not check Origin
	if err != nil {
		g.mu.Unlock()
		g.log.Warn("websocket upgrade failed", "error", err)
		return
	}
	ws.SetReadLimit(wsMaxMessage)
	c := &wsConn{id: connID, ws: ws, authCtx: authCtx, connectedAt: connectedAt, lastActive: connectedAt,
		sourceIP: hostOnly(r.RemoteAddr), userAgent: r.UserAgent(), done: make(chan struct{})}
	g.conns[connID] = c
	g.mu.Unlock()
	g.serve(r, c)
}

// authorize runs the Lambda REQUEST authorizer as API Gateway does.
func (g *wsGateway) authorize(w http.ResponseWriter, r *http.Request, rc events.APIGatewayWebsocketProxyRequestContext,
	headers, query map[string]string,
) (map[string]any, bool) {
	for _, q := range g.identity {
		if query[q] == "" {
			writeGatewayError(w, http.StatusUnauthorized, "Unauthorized")
			return nil, false
		}
	}
	for _, h := range g.headerIdents {
		if r.Header.Get(h) == "" {
			writeGatewayError(w, http.StatusUnauthorized, "Unauthorized")
			return nil, false
		}
	}
	methodArn := "arn:aws:execute-api:" + LocalRegion + ":" + LocalAccountID + ":" + g.apiID + "/" + g.stage + "/$connect"
	ev := events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type: "REQUEST", MethodArn: methodArn, Headers: headers, QueryStringParameters: query,
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
			AccountID: LocalAccountID, APIID: g.apiID, Stage: g.stage, RequestID: rc.RequestID,
			Identity: events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: rc.Identity.SourceIP},
		},
	}
	var resp events.APIGatewayCustomAuthorizerResponse
	err := g.authInvoke(r.Context(), g.authTimeout, func(ctx context.Context) error {
		var herr error
		resp, herr = g.authorizer(ctx, ev)
		return herr
	})
	switch {
	case err != nil && err.Error() == "Unauthorized":
		writeGatewayError(w, http.StatusUnauthorized, "Unauthorized")
		return nil, false
	case err != nil:
		g.log.Error("websocket authorizer error", "error", err)
		writeGatewayError(w, http.StatusInternalServerError, "Internal server error")
		return nil, false
	case !policyAllows(resp.PolicyDocument, methodArn):
		writeGatewayError(w, http.StatusForbidden, "Forbidden")
		return nil, false
	}
	out := map[string]any{"principalId": resp.PrincipalID}
	for k, v := range resp.Context {
		out[k] = v
	}
	return out, true
}

// policyAllows: an Allow of execute-api:Invoke on a resource matching
// methodArn, and no Deny of it.
func policyAllows(p events.APIGatewayCustomAuthorizerPolicy, methodArn string) bool {
	allowed := false
	for _, st := range p.Statement {
		actionOK := false
		for _, a := range st.Action {
			actionOK = actionOK || a == "*" || strings.EqualFold(a, "execute-api:Invoke") || a == "execute-api:*"
		}
		resOK := false
		for _, res := range st.Resource {
			ok, _ := path.Match(res, methodArn)
			resOK = resOK || ok || res == methodArn || res == "*"
		}
		if !actionOK || !resOK {
			continue
		}
		switch st.Effect {
		case "Deny":
			return false
		case "Allow":
			allowed = true
		}
	}
	return allowed
}

func (g *wsGateway) call(ctx context.Context, route wsRoute, ev events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error) {
	var resp events.APIGatewayProxyResponse
	err := route.invoke(ctx, route.timeout, func(ctx context.Context) error {
		var herr error
		resp, herr = route.handler(ctx, ev)
		return herr
	})
	return resp, err
}

// serve reads the client's messages into their routes until the connection
// closes (either side, or a limit), then runs $disconnect.
func (g *wsGateway) serve(r *http.Request, c *wsConn) {
	g.wg.Add(1)
	defer g.wg.Done()
	ctx, cancel := context.WithCancel(g.running)
	defer cancel()
	go g.watchLimits(ctx, c)
	for {
		typ, data, err := c.ws.Read(ctx)
		if err != nil {
			break
		}
		c.mu.Lock()
		c.lastActive = g.now()
		c.mu.Unlock()
		key := "$default"
		var sel struct {
			Action string `json:"action"`
		}
		if json.Unmarshal(data, &sel) == nil && sel.Action != "" && !strings.HasPrefix(sel.Action, "$") {
			if _, ok := g.routes[sel.Action]; ok {
				key = sel.Action
			}
		}
		rc := g.requestContext(r, key, "MESSAGE", c.id, c.connectedAt)
		rc.Authorizer = c.authCtx
		ev := events.APIGatewayWebsocketProxyRequest{RequestContext: rc, Body: string(data)}
		if typ == websocket.MessageBinary {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(data), true
		}
		if _, err := g.call(ctx, g.routes[key], ev); err != nil {
			g.log.Warn("websocket route function error", "route", key, "error", err)
		}
	}
	c.closeOnce.Do(func() { close(c.done) })
	_ = c.ws.CloseNow()
	g.mu.Lock()
	delete(g.conns, c.id)
	g.mu.Unlock()
	rc := g.requestContext(r, "$disconnect", "DISCONNECT", c.id, c.connectedAt)
	rc.Authorizer = c.authCtx
	if _, err := g.call(context.WithoutCancel(ctx), g.routes["$disconnect"], events.APIGatewayWebsocketProxyRequest{RequestContext: rc}); err != nil {
		g.log.Warn("websocket $disconnect function error", "error", err)
	}
}

// watchLimits closes the connection at 2 hours or 10 minutes idle, on the
// stack's clock (so tests can advance it), with 1001 as API Gateway does.
func (g *wsGateway) watchLimits(ctx context.Context, c *wsConn) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.done:
			return
		case <-t.C:
			c.mu.Lock()
			open := g.now().Before(live.GatewayDeadline(c.connectedAt, c.lastActive))
			c.mu.Unlock()
			if !open {
				_ = c.ws.Close(websocket.StatusGoingAway, "Going away")
				return
			}
		}
	}
}

// manage serves <stage>/@connections/{id}: POST sends the body as one text
// message, GET describes the connection, DELETE closes it; a connection the
// stage does not have is 410 GoneException.
func (g *wsGateway) manage(w http.ResponseWriter, r *http.Request) {
	authz := r.Header.Get("Authorization")
	if !strings.HasPrefix(authz, "AWS4-HMAC-SHA256 ") || !strings.Contains(authz, "/execute-api/aws4_request") {
		writeGatewayError(w, http.StatusForbidden, "Missing Authentication Token")
		return
	}
	g.mu.Lock()
	c := g.conns[r.PathValue("id")]
	g.mu.Unlock()
	if c == nil {
		w.Header().Set("x-amzn-ErrorType", "GoneException")
		writeGatewayError(w, http.StatusGone, "")
		return
	}
	switch r.Method {
	case http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, wsMaxMessage+1))
		if err != nil || len(body) > wsMaxFrame {
			w.Header().Set("x-amzn-ErrorType", "PayloadTooLargeException")
			writeGatewayError(w, http.StatusRequestEntityTooLarge, "Message too long")
			return
		}
		c.writeMu.Lock()
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		err = c.ws.Write(ctx, websocket.MessageText, body)
		cancel()
		c.writeMu.Unlock()
		if err != nil {
			w.Header().Set("x-amzn-ErrorType", "GoneException")
			writeGatewayError(w, http.StatusGone, "")
			return
		}
		w.WriteHeader(http.StatusOK)
	case http.MethodGet:
		c.mu.Lock()
		last := c.lastActive
		c.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{
			"connectedAt": c.connectedAt.UTC().Format(time.RFC3339Nano), "lastActiveAt": last.UTC().Format(time.RFC3339Nano),
			"identity": map[string]string{"sourceIp": c.sourceIP, "userAgent": c.userAgent},
		})
	case http.MethodDelete:
		_ = c.ws.Close(websocket.StatusNormalClosure, "")
		w.WriteHeader(http.StatusNoContent)
	default:
		writeGatewayError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	}
}

// Connections counts the open WebSocket connections (tests).
func (g *wsGateway) Connections() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

// closeAll closes every connection (the stack stops).
func (g *wsGateway) closeAll() {
	g.mu.Lock()
	conns := make([]*wsConn, 0, len(g.conns))
	for _, c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close(websocket.StatusGoingAway, "Going away")
	}
	g.wg.Wait()
}

// manageHTTPClient is the HTTP client of a function that calls the
// management endpoint: its calls there are checked against the function's
// IAM role (execute-api:ManageConnections on the connection's ARN) before
// they reach the runner, as AWS authorizes the signed request; every other
// request (the SDK's) passes through.
type manageHTTPClient struct {
	function string
	host     string // the runner's host:port
	apiID    string
	enforcer *iam.Enforcer
	base     aws.HTTPClient
}

var manageOps = map[string]string{http.MethodPost: "PostToConnection", http.MethodGet: "GetConnection", http.MethodDelete: "DeleteConnection"}

func (m *manageHTTPClient) Do(req *http.Request) (*http.Response, error) {
	stage, id, ok := strings.Cut(strings.TrimPrefix(req.URL.EscapedPath(), "/"), "/@connections/")
	if req.URL.Host != m.host || !ok {
		return m.base.Do(req)
	}
	op := manageOps[req.Method]
	if err := m.enforcer.Check(m.function, "ApiGatewayManagementApi", op,
		&iam.ManageConnectionsInput{APIID: m.apiID, Stage: stage, Method: req.Method, ConnectionID: id}); err != nil {
		var ade *iam.AccessDeniedError
		msg := err.Error()
		if errors.As(err, &ade) {
			msg = ade.ErrorMessage()
		}
		body, _ := json.Marshal(map[string]string{"message": msg})
		return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Request: req,
			Header: http.Header{"Content-Type": {"application/json"}, "X-Amzn-Errortype": {"AccessDeniedException"}},
			Body:   io.NopCloser(bytes.NewReader(body))}, nil
	}
	return m.base.Do(req)
}

var _ aws.HTTPClient = (*manageHTTPClient)(nil)

func defaultHTTPClient() aws.HTTPClient { return app.NewHTTPClient() }

// webSocketAPI is the template's WebSocket API: its logical id and stage.
func (s *Stack) webSocketAPI() (id, stage string) {
	for aid, a := range s.Template.GetAllApiGatewayV2ApiResources() {
		if aws.ToString(a.ProtocolType) != "WEBSOCKET" {
			continue
		}
		for _, st := range s.Template.GetAllApiGatewayV2StageResources() {
			if st.ApiId == "${ref:"+aid+"}" {
				return aid, st.StageName
			}
		}
		return aid, ""
	}
	return "", ""
}

// webSocketStage is the WebSocket API's stage name ("" without one).
func (s *Stack) webSocketStage() string {
	_, stage := s.webSocketAPI()
	return stage
}

// webSocketAPIID is the WebSocket API's local id, as the IAM policies name
// it ("" without one).
func (s *Stack) webSocketAPIID() string {
	id, _ := s.webSocketAPI()
	if id == "" || s.Resources == nil {
		return ""
	}
	v, err := s.Resources.Resolve("${ref:" + id + "}")
	if err != nil {
		return ""
	}
	return v
}
