package devstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/time/rate"
)

// APIHandler is the API function's handler.
type APIHandler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// DevCallerHeader names the local stand-in for SigV4: its value becomes the
// IAM caller of service routes. Default "dev".
const DevCallerHeader = "X-Herald-Dev-Caller"

// gateway emulates an API Gateway HTTP API (payload format 2.0) as the
// transformed template defines it (HTTPAPI): route matching, the stage's
// throttles, IAM and JWT authorizers, CORS, the request and response
// mapping.
type gateway struct {
	routes  []compiledRoute
	handler APIHandler
	jwt     *jwtIssuer
	timeout time.Duration
	log     *slog.Logger
	now     func() time.Time
	invoke  func(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error
	// cors is the API's CORS configuration (nil: none, as without one on AWS).
	cors *CORS
	// limiters throttle routes by key (a route without one is not throttled).
	limiters map[string]*rate.Limiter
}

// newHTTPGateway serves the template's HTTP API (Template.HTTPAPI) with the
// runner's HTTP functions by logical id, and the JWT authorizer's issuer
// (the runner itself unless JwtIssuer is overridden).
func (s *Stack) newHTTPGateway(handlers map[string]APIHandler, timeouts map[string]time.Duration) error {
	api, err := s.Template.HTTPAPI()
	if err != nil || api == nil {
		return err
	}
	fn := ""
	for _, r := range api.Routes {
		if _, ok := handlers[r.Function]; !ok {
			return fmt.Errorf("%s: route %s integrates %s, which the local runner does not serve HTTP with", api.LogicalID, r.Key(), r.Function)
		}
		if fn != "" && r.Function != fn {
			return fmt.Errorf("%s: the local runner's gateway serves one function's routes, not %s's and %s's", api.LogicalID, fn, r.Function)
		}
		fn = r.Function
	}
	g := &gateway{routes: compileRoutes(api.Routes), handler: handlers[fn], timeout: timeouts[fn], log: s.log, now: s.Clock.Now,
		invoke: s.invoke(fn), cors: api.CORS, limiters: map[string]*rate.Limiter{}}
	for _, r := range api.Routes {
		if th, ok := api.ThrottleOf(r.Key()); ok {
			g.limiters[r.Key()] = rate.NewLimiter(rate.Limit(th.RateLimit), th.BurstLimit)
		}
	}
	var issuer *JWTAuthorizer
	for _, name := range slices.Sorted(maps.Keys(api.JWT)) {
		a := api.JWT[name]
		if a.IdentitySource != "$request.header.Authorization" {
			return fmt.Errorf("%s: authorizer %s reads %s: the local runner's gateway reads $request.header.Authorization", api.LogicalID, name, a.IdentitySource)
		}
		if issuer != nil && (issuer.Issuer != a.Issuer || !slices.Equal(issuer.Audience, a.Audience)) {
			return fmt.Errorf("%s: the local runner plays one JWT issuer and audience; authorizer %s has another", api.LogicalID, name)
		}
		issuer = &a
	}
	if issuer != nil {
		if s.jwt, err = newJWTIssuer(issuer.Issuer, issuer.Audience); err != nil {
			return err
		}
		s.jwt.routes(s.mux)
		g.jwt = s.jwt
	}
	s.mux.Handle("/", g)
	s.server.Handler = exactPaths(s.mux, g) // no path cleaning, as on API Gateway
	return nil
}

type compiledRoute struct {
	Route
	// segments are the route path's segments; a greedy route's last one is
	// its "{name+}" variable.
	segments []string
	greedy   bool
	// catchAll is the $default route.
	catchAll bool
}

func compileRoutes(rs []Route) []compiledRoute {
	out := make([]compiledRoute, len(rs))
	for i, r := range rs {
		c := compiledRoute{Route: r}
		if r.Path == "$default" {
			c.catchAll = true
		} else if p := strings.TrimPrefix(r.Path, "/"); p != "" {
			c.segments = strings.Split(p, "/")
			c.greedy = isGreedy(c.segments[len(c.segments)-1])
		}
		out[i] = c
	}
	return out
}

func isVariable(seg string) bool { return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' }
func isGreedy(seg string) bool   { return isVariable(seg) && strings.HasSuffix(seg, "+}") }
func variableName(seg string) string {
	return strings.TrimSuffix(seg[1:len(seg)-1], "+")
}

// requestSegments splits an escaped request path into its decoded segments.
// ok is false for a path that no route matches on API Gateway: one that is
// not absolute, or has an empty segment (a trailing "/" or a "//"), a "." or
// ".." segment (percent-encoded too: %2E is "."), or a bad percent-encoding.
// Routes match exactly: nothing is cleaned, nothing is redirected.
func requestSegments(escaped string) ([]string, bool) {
	if !strings.HasPrefix(escaped, "/") {
		return nil, false
	}
	if escaped == "/" {
		return nil, true
	}
	raw := strings.Split(escaped[1:], "/")
	segs := make([]string, len(raw))
	for i, r := range raw {
		s, err := url.PathUnescape(r)
		if err != nil || s == "" || s == "." || s == ".." {
			return nil, false
		}
		segs[i] = s
	}
	return segs, true
}

// match finds the route for method and escaped path as an HTTP API does:
// routes without a greedy variable first (a literal segment beats a
// variable, the method beats ANY), then the greedy route with the longest
// prefix, then $default. A variable takes one whole, non-empty segment,
// decoded; a greedy variable the rest of the path (one segment at least).
func (g *gateway) match(method, escaped string) (*compiledRoute, map[string]string) {
	segs, exact := requestSegments(escaped)
	var best, catchAll *compiledRoute
	var bestParams map[string]string
	bestRank := -1
	for i := range g.routes {
		r := &g.routes[i]
		if r.Method != method && r.Method != "ANY" {
			continue
		}
		if r.catchAll {
			catchAll = r
			continue
		}
		if !exact {
			continue
		}
		params, literals, ok := r.bind(segs)
		if !ok {
			continue
		}
		// Rank: exact routes above greedy ones, then literal segments, then
		// the named method above ANY.
		rank := literals * 2
		if !r.greedy {
			rank += 1 << 20
		}
		if r.Method == method {
			rank++
		}
		if rank > bestRank {
			best, bestParams, bestRank = r, params, rank
		}
	}
	if best == nil && catchAll != nil {
		return catchAll, nil
	}
	return best, bestParams
}

// bind matches the route's segments against a request's decoded segments.
func (r *compiledRoute) bind(segs []string) (map[string]string, int, bool) {
	n := len(r.segments)
	if r.greedy {
		if len(segs) < n {
			return nil, 0, false
		}
	} else if len(segs) != n {
		return nil, 0, false
	}
	params := map[string]string{}
	literals := 0
	for j, s := range r.segments {
		switch {
		case r.greedy && j == n-1:
			params[variableName(s)] = strings.Join(segs[j:], "/")
		case isVariable(s):
			params[variableName(s)] = segs[j]
		case s == segs[j]:
			literals++
		default:
			return nil, 0, false
		}
	}
	return params, literals, true
}

// exactPaths is the runner's HTTP front: http.ServeMux cleans a path with
// an empty, "." or ".." segment and answers a redirect to another route (a
// 307 keeps a POST's body: /v1/x/../../_dev/faults would reach the fault
// route), where API Gateway matches routes exactly. Such a request goes to
// api as it is (which matches no route with it: 404 {"message":"Not
// Found"}); any other to mux (the runner's own /_dev/ and /.well-known/
// routes, and the gateway at "/").
func exactPaths(mux *http.ServeMux, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if muxWouldClean(r.URL) {
			api.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// muxWouldClean reports whether http.ServeMux would rewrite the request's
// path (it cleans the decoded path, keeping a trailing slash), or the
// escaped path has a percent-encoded dot segment.
func muxWouldClean(u *url.URL) bool {
	p := u.Path
	if p == "" || p[0] != '/' {
		return true
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	if c != p {
		return true
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if s, err := url.PathUnescape(seg); err != nil || s == "." || s == ".." {
			return true
		}
	}
	return false
}

const maxPayload = 10 << 20 // API Gateway's request payload limit

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.cors != nil {
		if isPreflight(r) {
			g.cors.preflight(w, r)
			return
		}
		w = &corsWriter{ResponseWriter: w, cors: g.cors, req: r}
	}
	route, params := g.match(r.Method, r.URL.EscapedPath())
	if route == nil {
		writeGatewayError(w, http.StatusNotFound, "Not Found")
		return
	}
	if l := g.limiters[route.Key()]; l != nil && !l.AllowN(g.now(), 1) {
		writeGatewayError(w, http.StatusTooManyRequests, "Too Many Requests")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The body did not arrive within requestReadTimeout.
		writeGatewayError(w, http.StatusRequestTimeout, "Request Timeout")
		return
	}
	if err != nil || len(body) > maxPayload {
		writeGatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	now := g.now()
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: route.Key(), RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Headers: map[string]string{}, PathParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: route.Key(), AccountID: LocalAccountID, Stage: "$default", APIID: "local",
			DomainName: r.Host, DomainPrefix: "local", RequestID: newRequestID(),
			Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: hostOnly(r.RemoteAddr), UserAgent: r.UserAgent(),
			},
		},
	}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			continue
		}
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	for _, c := range r.Cookies() {
		ev.Cookies = append(ev.Cookies, c.Name+"="+c.Value)
	}
	if q := r.URL.Query(); len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	if len(params) == 0 {
		ev.PathParameters = nil
	}
	if len(body) > 0 {
		if isTextual(r.Header.Get("Content-Type")) && utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	switch route.Auth {
	case "NONE":
	case "AWS_IAM":
		caller := r.Header.Get(DevCallerHeader)
		if caller == "" {
			caller = "dev"
		}
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
				AccessKey: "ASIALOCAL", AccountID: LocalAccountID, CallerID: "AIDALOCAL:" + caller,
				UserARN: "arn:aws:iam::" + LocalAccountID + ":user/" + caller, UserID: "AIDALOCAL",
			},
		}
	default:
		claims, err := g.jwt.verify(r.Header.Get("Authorization"), g.now(), route.Scopes)
		if errors.Is(err, errMissingScope) {
			writeGatewayError(w, http.StatusForbidden, "Forbidden")
			return
		}
		if err != nil {
			writeGatewayError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
		}
	}
	var resp events.APIGatewayV2HTTPResponse
	err = g.invoke(r.Context(), g.timeout, func(ctx context.Context) error {
		var herr error
		resp, herr = g.handler(ctx, ev)
		return herr
	})
	if err != nil {
		g.log.Error("api function error", "route", route.Key(), "error", err)
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	writeLambdaResponse(w, resp)
}

// corsWriter adds the CORS headers to every response the gateway writes
// (the function's, and the gateway's own refusals).
type corsWriter struct {
	http.ResponseWriter
	cors    *CORS
	req     *http.Request
	written bool
}

func (c *corsWriter) WriteHeader(status int) {
	if !c.written {
		c.written = true
		c.cors.decorate(c.ResponseWriter.Header(), c.req)
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *corsWriter) Write(b []byte) (int, error) {
	if !c.written {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

func writeLambdaResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeGatewayError answers as API Gateway does when it refuses a request
// itself (an HTTP API cannot customise these): {"message": …}, no newline.
func writeGatewayError(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(map[string]string{"message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func isTextual(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "" || strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "json") ||
		strings.HasSuffix(mt, "xml") || mt == "application/x-www-form-urlencoded" || mt == "application/javascript"
}

func hostOnly(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return strings.Trim(addr[:i], "[]")
	}
	return addr
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
