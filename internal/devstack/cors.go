package devstack

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// CORS is an HTTP API's CORS configuration (x-amazon-apigateway-cors in
// the transformed template's OpenAPI body: HTTPAPI) as API Gateway applies it
// (docs: "Configure CORS for HTTP APIs in API Gateway"):
//
//   - a preflight (OPTIONS with Origin and Access-Control-Request-Method) is
//     answered by the gateway itself, with 204 and no body, whether or not an
//     OPTIONS route exists, before any authorizer or function runs;
//   - CORS headers are returned only when the request has an Origin header
//     that the configuration lists; any other origin gets none, so the
//     browser refuses the response;
//   - on other requests the configured headers are added to the
//     integration's response, and CORS headers the integration returns are
//     ignored (dropped).
//
// Origins are compared exactly (scheme, host and port), as browsers send them.
type CORS struct {
	AllowOrigins     []string
	AllowHeaders     []string
	AllowMethods     []string
	ExposeHeaders    []string
	MaxAge           int // seconds; 0 sends no Access-Control-Max-Age
	AllowCredentials bool
}

// allowed reports whether origin is one the configuration lists.
func (c *CORS) allowed(origin string) bool {
	return c != nil && origin != "" && slices.Contains(c.AllowOrigins, origin)
}

// isPreflight: what API Gateway answers itself.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// preflight answers a preflight request: 204, with the configuration's
// headers for a listed origin and none for any other.
func (c *CORS) preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Origin")
	if origin := r.Header.Get("Origin"); c.allowed(origin) {
		h.Set("Access-Control-Allow-Origin", origin)
		if len(c.AllowMethods) > 0 {
			h.Set("Access-Control-Allow-Methods", strings.Join(c.AllowMethods, ","))
		}
		if len(c.AllowHeaders) > 0 {
			h.Set("Access-Control-Allow-Headers", strings.Join(c.AllowHeaders, ","))
		}
		if c.MaxAge > 0 {
			h.Set("Access-Control-Max-Age", strconv.Itoa(c.MaxAge))
		}
		if c.AllowCredentials {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// decorate sets the CORS headers of an actual (non-preflight) response:
// whatever CORS headers the function returned are dropped, and a listed
// origin gets Allow-Origin (and Expose-Headers, Allow-Credentials).
func (c *CORS) decorate(h http.Header, r *http.Request) {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			h.Del(k)
		}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return
	}
	h.Add("Vary", "Origin")
	if !c.allowed(origin) {
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if len(c.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(c.ExposeHeaders, ","))
	}
	if c.AllowCredentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
}
