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
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// APIHandler is the API function's handler.
type APIHandler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// DevCallerHeader names the local stand-in for SigV4: its value becomes the
// IAM caller of service routes. Default "dev".
const DevCallerHeader = "X-Herald-Dev-Caller"

// gateway emulates an API Gateway HTTP API (payload format 2.0): route
// matching from the template, IAM and JWT authorizers, the request and
// response mapping.
type gateway struct {
	routes  []compiledRoute
	handler APIHandler
	jwt     *jwtIssuer
	timeout time.Duration
	log     *slog.Logger
	now     func() time.Time
	invoke  func(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error
	// cors is the API's CorsConfiguration (nil: none, as without one on AWS).
	cors *CORS
}

type compiledRoute struct {
	Route
	segments []string
}

func compileRoutes(rs []Route) []compiledRoute {
	out := make([]compiledRoute, len(rs))
	for i, r := range rs {
		out[i] = compiledRoute{Route: r, segments: strings.Split(strings.Trim(r.Path, "/"), "/")}
	}
	return out
}

// match finds the route for method and path; literal segments beat
// parameters, as in API Gateway.
func (g *gateway) match(method, path string) (*compiledRoute, map[string]string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var best *compiledRoute
	var bestParams map[string]string
	bestLiterals := -1
	for i := range g.routes {
		r := &g.routes[i]
		if r.Method != method || len(r.segments) != len(segs) {
			continue
		}
		params := map[string]string{}
		literals := 0
		ok := true
		for j, s := range r.segments {
			if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
				if segs[j] == "" {
					ok = false
					break
				}
				params[s[1:len(s)-1]] = segs[j]
				continue
			}
			if s != segs[j] {
				ok = false
				break
			}
			literals++
		}
		if ok && literals > bestLiterals {
			best, bestParams, bestLiterals = r, params, literals
		}
	}
	return best, bestParams
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
	route, params := g.match(r.Method, r.URL.Path)
	if route == nil {
		writeGatewayError(w, http.StatusNotFound, "Not Found")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
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
