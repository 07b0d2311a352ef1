package api

import (
	"mime"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// formRoutes take an HTML form body instead of JSON: the one-click
// unsubscribe POST (RFC 8058).
var formRoutes = map[string]bool{"POST /v1/unsubscribe": true}

// checkMediaType refuses a body Herald would otherwise have to guess about:
// any Content-Encoding (Herald decodes none, and a gateway passes compressed
// bytes through), and a body that is not application/json (optionally with
// charset=utf-8) — or, on form routes, not a URL-encoded form.
func checkMediaType(ev events.APIGatewayV2HTTPRequest) *Problem {
	if _, ok := ev.Headers["content-encoding"]; ok {
		return &Problem{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Header: "Content-Encoding",
			Detail: "request bodies must not be content-encoded"}
	}
	if ev.Body == "" {
		return nil
	}
	want := "application/json"
	if formRoutes[ev.RouteKey] {
		want = "application/x-www-form-urlencoded"
	}
	mt, params, err := mime.ParseMediaType(ev.Headers["content-type"])
	ok := err == nil && mt == want
	for k, v := range params {
		ok = ok && k == "charset" && strings.EqualFold(v, "utf-8")
	}
	if !ok {
		return &Problem{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Header: "Content-Type",
			Detail: "the body must be " + want + " (charset utf-8 if given)"}
	}
	return nil
}
