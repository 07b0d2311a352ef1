package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/devstack"
)

// hostileBody is one request body of the corpus and the refusal the
// OpenAPI document promises for it.
type hostileBody struct {
	name        string
	body        string
	contentType string
	encoding    string
	base64      bool // the body is base64 (API Gateway's isBase64Encoded)
	status      int
	code        string
	pointer     string
}

// TestHostileBodiesOnEveryBodyRoute runs the hostile-body corpus against
// every POST, PUT and PATCH route template.yaml gives the API function (a
// route added later is in it without a change here): on a route whose
// openapi.yaml operation takes a JSON body, duplicate, wrong-case and unknown
// members, invalid UTF-8, trailing data, non-objects, a huge body and the
// wrong media type are each refused with the stable code; a route that takes
// no body refuses one; the form route refuses JSON. Nothing is written.
func TestHostileBodiesOnEveryBodyRoute(t *testing.T) {
	spec, root := loadSpec(t)
	tmpl, err := devstack.LoadTransformed(context.Background(), root, filepath.Join(root, "template.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range tmpl.Routes() {
		if r.Function != "ApiFunction" || (r.Method != "POST" && r.Method != "PUT" && r.Method != "PATCH") {
			continue
		}
		op := spec.operation(r.Key())
		if op == nil {
			t.Errorf("%s: no operation in openapi.yaml", r.Key())
			continue
		}
		var content map[string]any
		if body, ok := op["requestBody"]; ok {
			content, _ = spec.resolve(t, body)["content"].(map[string]any)
		}
		var corpus []hostileBody
		switch {
		case content["application/json"] != nil:
			kinds["json"]++
			schema := spec.resolve(t, content["application/json"].(map[string]any)["schema"])
			corpus = jsonCorpus(t, r.Key(), spec, schema)
		case content["application/x-www-form-urlencoded"] != nil:
			kinds["form"]++
			corpus = []hostileBody{
				{name: "JSON instead of the form", body: `{"List-Unsubscribe":"One-Click"}`, contentType: "application/json", status: 415, code: "unsupported_media_type"},
				{name: "gzip-encoded form", body: "List-Unsubscribe=One-Click", contentType: "application/x-www-form-urlencoded", encoding: "gzip", status: 415, code: "unsupported_media_type"},
				{name: "huge form", body: "List-Unsubscribe=" + strings.Repeat("a", 2<<20), contentType: "application/x-www-form-urlencoded", status: 413, code: "body_too_large"},
			}
		case len(content) == 0:
			kinds["none"]++
			corpus = []hostileBody{
				{name: "a JSON object", body: `{"a":1,"a":2}`, contentType: "application/json", status: 400, code: "unexpected_body"},
				{name: "an object with a member", body: `{"a":1}`, contentType: "application/json", status: 400, code: "unexpected_body"},
				{name: "an empty array", body: `[]`, contentType: "application/json", status: 400, code: "unexpected_body"},
				{name: "invalid UTF-8", body: "\xff", contentType: "application/json", status: 400, code: "unexpected_body"},
				{name: "text", body: "x", contentType: "text/plain", status: 415, code: "unsupported_media_type"},
				{name: "gzip-encoded", body: "x", contentType: "application/json", encoding: "gzip", status: 415, code: "unsupported_media_type"},
			}
		default:
			t.Errorf("%s: request body of media types %v: the corpus knows JSON and forms", r.Key(), keys(content))
			continue
		}
		responses, _ := op["responses"].(map[string]any)
		params := pathParams(t, spec, r.Key())
		if len(content) == 0 {
			// Many HTTP clients send an empty JSON object by default: it
			// is no body, answered as the request without one.
			for _, empty := range []hostileBody{{body: `{}`}, {body: " { }\n"}, {body: "e30=", base64: true}} {
				t.Run(r.Key()+"/empty object "+strconv.Quote(empty.body), func(t *testing.T) {
					h, _ := api.NewFakeHandler(t)
					want := callRoute(t, h, r, params, hostileBody{})
					empty.contentType = "application/json"
					got := callRoute(t, h, r, params, empty)
					if got.StatusCode != want.StatusCode || strings.Contains(got.Body, "unexpected_body") {
						t.Fatalf("%d %.300s, want %d as without a body", got.StatusCode, got.Body, want.StatusCode)
					}
				})
			}
		}
		for _, hb := range corpus {
			t.Run(r.Key()+"/"+hb.name, func(t *testing.T) {
				if _, ok := responses[fmt.Sprint(hb.status)]; !ok {
					t.Errorf("openapi.yaml does not promise %d on %s", hb.status, r.Key())
				}
				h, writes := api.NewFakeHandler(t)
				resp := callRoute(t, h, r, params, hb)
				var p struct{ Code, Pointer string }
				if resp.StatusCode != hb.status || resp.Headers["Content-Type"] != "application/problem+json" ||
					json.Unmarshal([]byte(resp.Body), &p) != nil || p.Code != hb.code || (hb.pointer != "" && p.Pointer != hb.pointer) {
					t.Fatalf("%d %.300s, want %d %s %s", resp.StatusCode, resp.Body, hb.status, hb.code, hb.pointer)
				}
				if n := writes(); n != 0 {
					t.Fatalf("%d writes for a refused body", n)
				}
			})
		}
	}
	t.Logf("body routes: %v", kinds)
	if kinds["json"] < 10 || kinds["none"] < 5 || kinds["form"] != 1 {
		t.Fatalf("routes by body kind %v: the template's routes were not all found", kinds)
	}
}

// jsonCorpus is the hostile corpus for a JSON body route. Duplicate and
// wrong-case members use a member of the route's schema (with a value of its
// type), so the decoder reaches the key check.
func jsonCorpus(t *testing.T, route string, spec *openapiDoc, schema map[string]any) []hostileBody {
	props, _ := schema["properties"].(map[string]any)
	names := keys(props)
	member, value := "", ""
	for _, n := range names { // the first member whose type takes a plain value
		ps := spec.resolve(t, props[n])
		if _, formatted := ps["format"]; formatted {
			continue
		}
		switch ps["type"] {
		case "object":
			member, value = n, `{}`
		case "string":
			member, value = n, `"x"`
		case "boolean":
			member, value = n, `true`
		case "integer", "number":
			member, value = n, `1`
		case "array":
			member, value = n, `[]`
		}
		if member != "" {
			break
		}
	}
	if member == "" {
		t.Fatalf("%s: no member of the request schema with a plain type (members %v)", route, names)
	}
	const ct = "application/json"
	return []hostileBody{
		{name: "duplicate member", body: `{"` + member + `":` + value + `,"` + member + `":` + value + `}`, contentType: ct, status: 400, code: "duplicate_field", pointer: "/" + member},
		{name: "duplicate member spelled with an escape", body: `{"` + member + `":` + value + `,"` + escapeFirst(member) + `":` + value + `}`, contentType: ct, status: 400, code: "duplicate_field", pointer: "/" + member},
		{name: "wrong-case member", body: `{"` + strings.ToUpper(member[:1]) + member[1:] + `":` + value + `}`, contentType: ct, status: 400, code: "unknown_field", pointer: "/" + strings.ToUpper(member[:1]) + member[1:]},
		{name: "unknown member", body: `{"zzUnknown":1}`, contentType: ct, status: 400, code: "unknown_field", pointer: "/zzUnknown"},
		{name: "prototype pollution member", body: `{"__proto__":{"admin":true}}`, contentType: ct, status: 400, code: "unknown_field", pointer: "/__proto__"},
		{name: "invalid UTF-8", body: "{\"" + member + "\":\"bad\xff\"}", contentType: ct, status: 400, code: "invalid_json"},
		{name: "trailing data", body: `{} x`, contentType: ct, status: 400, code: "invalid_json"},
		{name: "two objects", body: `{}{}`, contentType: ct, status: 400, code: "invalid_json"},
		{name: "truncated", body: `{"` + member + `":`, contentType: ct, status: 400, code: "invalid_json"},
		{name: "array", body: `[]`, contentType: ct, status: 400, code: "invalid_json"},
		{name: "string", body: `"x"`, contentType: ct, status: 400, code: "invalid_json"},
		{name: "null", body: `null`, contentType: ct, status: 400, code: "invalid_json"},
		{name: "number", body: `1`, contentType: ct, status: 400, code: "invalid_json"},
		{name: "empty", body: ` `, contentType: ct, status: 400, code: "invalid_json"},
		{name: "huge", body: `{"` + member + `":"` + strings.Repeat("a", 2<<20) + `"}`, contentType: ct, status: 413, code: "body_too_large"},
		{name: "text/plain", body: `{}`, contentType: "text/plain", status: 415, code: "unsupported_media_type"},
		{name: "form", body: member + "=1", contentType: "application/x-www-form-urlencoded", status: 415, code: "unsupported_media_type"},
		{name: "JSON in latin-1", body: `{}`, contentType: "application/json; charset=iso-8859-1", status: 415, code: "unsupported_media_type"},
		{name: "no Content-Type", body: `{}`, contentType: "", status: 415, code: "unsupported_media_type"},
		{name: "gzip-encoded", body: `{}`, contentType: ct, encoding: "gzip", status: 415, code: "unsupported_media_type"},
	}
}

// escapeFirst spells a member name's first letter as a \u escape.
func escapeFirst(name string) string { return fmt.Sprintf(`\u%04x`, name[0]) + name[1:] }

// idPattern is the shape of Herald's ids in openapi.yaml: a letter and base32.
var idPattern = regexp.MustCompile(`^\^([a-z])\[0-9a-hjkmnp-tv-z\]\{(\d+)\}\$$`)

// pathParams gives each of a route's path variables a value of the shape
// openapi.yaml documents (its example, or an id of its pattern), so that a
// handler that checks the path first gets to the body; users are "u1".
func pathParams(t *testing.T, spec *openapiDoc, route string) map[string]string {
	_, path, _ := strings.Cut(route, " ")
	var declared []any
	if item, ok := spec.raw["paths"].(map[string]any)[path].(map[string]any); ok {
		declared, _ = item["parameters"].([]any)
	}
	if op := spec.operation(route); op != nil {
		more, _ := op["parameters"].([]any)
		declared = append(declared, more...)
	}
	out := map[string]string{}
	for _, d := range declared {
		p := spec.resolve(t, d)
		if p["in"] != "path" {
			continue
		}
		name, _ := p["name"].(string)
		schema := spec.resolve(t, p["schema"])
		switch m := idPattern.FindStringSubmatch(fmt.Sprint(schema["pattern"])); {
		case name == "userId":
			out[name] = "u1"
		case schema["example"] != nil:
			out[name] = fmt.Sprint(schema["example"])
		case m != nil:
			n := 0
			fmt.Sscan(m[2], &n)
			out[name] = m[1] + strings.Repeat("0", n)
		default:
			out[name] = "x1"
		}
	}
	return out
}

func rawPathOf(path string, params map[string]string) string {
	for k, v := range params {
		path = strings.ReplaceAll(path, "{"+k+"}", v)
	}
	return path
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// callRoute sends hb to route r of h, authorized as its route requires.
func callRoute(t *testing.T, h *api.Handler, r devstack.Route, params map[string]string, hb hostileBody) events.APIGatewayV2HTTPResponse {
	t.Helper()
	ev := events.APIGatewayV2HTTPRequest{RouteKey: r.Key(), RawPath: rawPathOf(r.Path, params), PathParameters: params,
		Body: hb.body, IsBase64Encoded: hb.base64, Headers: map[string]string{}}
	if hb.contentType != "" {
		ev.Headers["content-type"] = hb.contentType
	}
	if len(params) == 0 {
		ev.PathParameters = nil
	}
	if hb.encoding != "" {
		ev.Headers["content-encoding"] = hb.encoding
	}
	ev.RequestContext.HTTP.Method = r.Method
	switch r.Auth {
	case "NONE":
	case "AWS_IAM":
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::123456789012:user/svc"}}
	default: // a JWT authorizer: the path's user is the token's subject
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "u1"}}}
	}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
