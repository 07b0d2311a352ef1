package devstack

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
)

// Route is an HTTP API route.
type Route struct {
	Method, Path string
	Function     string
	// Auth is the authorizer: "AWS_IAM", "NONE" or a JWT authorizer's name.
	Auth string
	// Scopes are the route's authorization scopes (JWT routes): a token needs one.
	Scopes []string
}

// Key is the API Gateway route key, "POST /v1/notifications".
func (r Route) Key() string { return r.Method + " " + r.Path }

// HTTPAPI is the HTTP API of a transformed template as API Gateway imports
// it: the SAM transform turns AWS::Serverless::HttpApi and the functions'
// HttpApi events into an AWS::ApiGatewayV2::Api whose OpenAPI Body holds the
// routes (paths × methods, each with its Lambda integration and security
// requirement), the authorizers (components.securitySchemes) and the CORS
// configuration (x-amazon-apigateway-cors), and an AWS::ApiGatewayV2::Stage
// with the throttles. The local gateway serves exactly this.
type HTTPAPI struct {
	LogicalID string
	Routes    []Route
	// JWT are the JWT authorizers by name.
	JWT map[string]JWTAuthorizer
	// CORS is nil when the API has none (API Gateway then answers no
	// preflight).
	CORS *CORS
	// DefaultThrottle is the stage's DefaultRouteSettings (nil: none);
	// RouteThrottles its RouteSettings by route key.
	DefaultThrottle *Throttle
	RouteThrottles  map[string]Throttle
}

// JWTAuthorizer is a JWT authorizer's configuration.
type JWTAuthorizer struct {
	Issuer         string
	Audience       []string
	IdentitySource string
}

// Throttle is a route's steady rate (requests per second) and burst; in
// RouteThrottles, a limit the route's settings leave unset is -1 (the
// stage's default applies).
type Throttle struct {
	RateLimit  float64
	BurstLimit int
}

// ThrottleOf is the route's effective throttle: its RouteSettings, each
// limit it does not set taken from the stage's default; ok is false when
// neither throttles it.
func (a *HTTPAPI) ThrottleOf(routeKey string) (Throttle, bool) {
	r, hasRoute := a.RouteThrottles[routeKey]
	if a.DefaultThrottle == nil && !hasRoute {
		return Throttle{}, false
	}
	out := Throttle{RateLimit: -1, BurstLimit: -1}
	if hasRoute {
		out = r
	}
	if d := a.DefaultThrottle; d != nil {
		if out.RateLimit < 0 {
			out.RateLimit = d.RateLimit
		}
		if out.BurstLimit < 0 {
			out.BurstLimit = d.BurstLimit
		}
	}
	return out, out.RateLimit >= 0 && out.BurstLimit >= 0
}

// errUntransformed: an HTTP API is read from the transformed template only.
var errUntransformed = errors.New("the HTTP API is read from the transformed template (LoadTransformed), not from AWS::Serverless::HttpApi")

// openAPIMethods are the OpenAPI operations API Gateway imports as routes,
// with their route key method.
var openAPIMethods = map[string]string{
	"get": "GET", "put": "PUT", "post": "POST", "delete": "DELETE", "options": "OPTIONS", "head": "HEAD", "patch": "PATCH",
	"x-amazon-apigateway-any-method": "ANY",
}

// integrationFunction is a Lambda proxy integration's URI, resolved.
var integrationFunction = regexp.MustCompile(`:lambda:path/2015-03-31/functions/\$\{getatt:([A-Za-z0-9]+)\.Arn\}/invocations$`)

// HTTPAPI reads the template's HTTP API (nil when it has none). Anything
// the local gateway would not play as API Gateway does is an error rather
// than a route served differently.
func (t *Template) HTTPAPI() (*HTTPAPI, error) {
	if len(t.GetAllServerlessHttpApiResources()) > 0 {
		return nil, errUntransformed
	}
	var id string
	var body map[string]any
	for _, aid := range slices.Sorted(maps.Keys(t.GetAllApiGatewayV2ApiResources())) {
		props := documentProps(t.Document, aid)
		if p, _ := props["ProtocolType"].(string); p == "WEBSOCKET" {
			continue
		}
		b, ok := props["Body"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: the local runner plays an HTTP API defined by its OpenAPI Body", aid)
		}
		if id != "" {
			return nil, fmt.Errorf("the local runner plays one HTTP API; the template has %s and %s", id, aid)
		}
		id, body = aid, b
	}
	if id == "" {
		return nil, nil
	}
	api := &HTTPAPI{LogicalID: id, JWT: map[string]JWTAuthorizer{}, RouteThrottles: map[string]Throttle{}}
	iamSchemes := map[string]bool{}
	components, _ := body["components"].(map[string]any)
	schemes, _ := components["securitySchemes"].(map[string]any)
	for name, raw := range schemes {
		scheme, _ := raw.(map[string]any)
		if scheme["x-amazon-apigateway-authtype"] == "awsSigv4" {
			iamSchemes[name] = true
			continue
		}
		authz, ok := scheme["x-amazon-apigateway-authorizer"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: security scheme %s is neither IAM (awsSigv4) nor an API Gateway authorizer", id, name)
		}
		if authz["type"] != "jwt" {
			return nil, fmt.Errorf("%s: authorizer %s of type %v: the local runner plays JWT and IAM authorizers only", id, name, authz["type"])
		}
		conf, _ := authz["jwtConfiguration"].(map[string]any)
		issuer, _ := conf["issuer"].(string)
		audience, err := stringList(conf["audience"])
		source := fmt.Sprint(authz["identitySource"])
		if list, lerr := stringList(authz["identitySource"]); lerr == nil && len(list) == 1 {
			source = list[0]
		}
		if err != nil || issuer == "" || len(audience) == 0 {
			return nil, fmt.Errorf("%s: JWT authorizer %s needs an issuer and an audience list (jwtConfiguration %v)", id, name, conf)
		}
		api.JWT[name] = JWTAuthorizer{Issuer: issuer, Audience: audience, IdentitySource: source}
	}
	paths, _ := body["paths"].(map[string]any)
	for path, raw := range paths {
		item, _ := raw.(map[string]any)
		for op, raw := range item {
			method, ok := openAPIMethods[op]
			if !ok {
				continue // parameters, summary…
			}
			operation, _ := raw.(map[string]any)
			r, err := api.route(path, method, operation, body["security"], iamSchemes)
			if err != nil {
				return nil, fmt.Errorf("%s: route %s %s: %w", id, method, path, err)
			}
			api.Routes = append(api.Routes, r)
		}
	}
	sort.Slice(api.Routes, func(i, j int) bool { return api.Routes[i].Key() < api.Routes[j].Key() })
	if raw, ok := body["x-amazon-apigateway-cors"]; ok {
		c, err := parseCORS(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		api.CORS = c
	}
	if err := api.stageThrottles(t); err != nil {
		return nil, err
	}
	return api, nil
}

// route reads one OpenAPI operation: its Lambda proxy integration (payload
// format 2.0, the one the gateway plays) and its security requirement (the
// operation's, else the document's).
func (a *HTTPAPI) route(path, method string, op map[string]any, global any, iamSchemes map[string]bool) (Route, error) {
	r := Route{Method: method, Path: path}
	in, _ := op["x-amazon-apigateway-integration"].(map[string]any)
	uri, _ := in["uri"].(string)
	m := integrationFunction.FindStringSubmatch(uri)
	if in["type"] != "aws_proxy" || m == nil {
		return r, fmt.Errorf("integration %v: the local runner plays Lambda proxy integrations of the template's functions only", in)
	}
	if v := fmt.Sprint(in["payloadFormatVersion"]); v != "2.0" {
		return r, fmt.Errorf("payload format %s: the local runner plays 2.0 only", v)
	}
	r.Function = m[1]
	security, ok := op["security"]
	if !ok {
		security = global
	}
	requirements, _ := security.([]any)
	switch len(requirements) {
	case 0:
		r.Auth = "NONE"
		return r, nil
	case 1:
	default:
		return r, fmt.Errorf("%d alternative security requirements: the local runner plays one", len(requirements))
	}
	req, _ := requirements[0].(map[string]any)
	if len(req) != 1 {
		return r, fmt.Errorf("security requirement %v: the local runner plays one scheme per route", req)
	}
	for name, scopes := range req {
		switch {
		case name == "NONE": // SAM's Authorizer: NONE
			r.Auth = "NONE"
		case iamSchemes[name]:
			r.Auth = "AWS_IAM"
		default:
			if _, ok := a.JWT[name]; !ok {
				return r, fmt.Errorf("security scheme %s is not an authorizer of the API", name)
			}
			r.Auth = name
			list, err := stringList(scopes)
			if err != nil {
				return r, fmt.Errorf("scopes of %s: %w", name, err)
			}
			r.Scopes = list
		}
	}
	return r, nil
}

// stageThrottles reads the API's stage (AWS::ApiGatewayV2::Stage).
func (a *HTTPAPI) stageThrottles(t *Template) error {
	stage := ""
	for _, sid := range slices.Sorted(maps.Keys(t.GetAllApiGatewayV2StageResources())) {
		if t.GetAllApiGatewayV2StageResources()[sid].ApiId != "${ref:"+a.LogicalID+"}" {
			continue
		}
		if stage != "" {
			return fmt.Errorf("%s: the local runner plays one stage; the template has %s and %s", a.LogicalID, stage, sid)
		}
		stage = sid
	}
	if stage == "" {
		return nil
	}
	props := documentProps(t.Document, stage)
	read := func(v any, where string) (Throttle, bool, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return Throttle{}, false, nil
		}
		th := Throttle{RateLimit: -1, BurstLimit: -1}
		if x, ok := m["ThrottlingRateLimit"]; ok {
			n, ok := x.(float64)
			if !ok {
				return th, false, fmt.Errorf("%s %s ThrottlingRateLimit %v is not a number", stage, where, x)
			}
			th.RateLimit = n
		}
		if x, ok := m["ThrottlingBurstLimit"]; ok {
			n, ok := x.(float64)
			if !ok {
				return th, false, fmt.Errorf("%s %s ThrottlingBurstLimit %v is not a number", stage, where, x)
			}
			th.BurstLimit = int(n)
		}
		return th, th.RateLimit >= 0 || th.BurstLimit >= 0, nil
	}
	d, ok, err := read(props["DefaultRouteSettings"], "DefaultRouteSettings")
	if err != nil {
		return err
	}
	if ok {
		a.DefaultThrottle = &d
	}
	routeSettings, _ := props["RouteSettings"].(map[string]any)
	for key, v := range routeSettings {
		th, ok, err := read(v, "RouteSettings "+key)
		if err != nil {
			return err
		}
		if ok {
			a.RouteThrottles[key] = th
		}
	}
	return nil
}

// parseCORS reads x-amazon-apigateway-cors, the object API Gateway's
// OpenAPI import takes (API Gateway Developer Guide,
// "x-amazon-apigateway-cors object"): allowOrigins, allowHeaders,
// allowMethods and exposeHeaders arrays, maxAge an integer, allowCredentials
// a boolean.
func parseCORS(raw any) (*CORS, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("x-amazon-apigateway-cors is %T, not an object: API Gateway reads no CORS configuration from it", raw)
	}
	c := &CORS{}
	var err error
	for k, v := range m {
		switch k {
		case "allowOrigins":
			c.AllowOrigins, err = stringList(v)
		case "allowHeaders":
			c.AllowHeaders, err = stringList(v)
		case "allowMethods":
			c.AllowMethods, err = stringList(v)
		case "exposeHeaders":
			c.ExposeHeaders, err = stringList(v)
		case "maxAge":
			n, ok := v.(float64)
			if !ok || n != float64(int(n)) {
				err = fmt.Errorf("%v is not an integer", v)
			}
			c.MaxAge = int(n)
		case "allowCredentials":
			c.AllowCredentials, ok = v.(bool)
			if !ok {
				err = fmt.Errorf("%v is not a boolean", v)
			}
		default:
			err = errors.New("not a property of the object")
		}
		if err != nil {
			return nil, fmt.Errorf("x-amazon-apigateway-cors %s: %w", k, err)
		}
	}
	return c, nil
}

// stringList reads a JSON array of strings.
func stringList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%v is not an array", v)
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("item %v is not a string", x)
		}
		out[i] = s
	}
	return out, nil
}

// documentProps are a resource's resolved Properties as plain JSON values.
func documentProps(doc map[string]any, id string) map[string]any {
	resources, _ := doc["Resources"].(map[string]any)
	r, _ := resources[id].(map[string]any)
	p, _ := r["Properties"].(map[string]any)
	return p
}

// Routes are the HTTP API's routes (HTTPAPI), sorted by key; nil without
// an HTTP API or when it cannot be read (HTTPAPI says why).
func (t *Template) Routes() []Route {
	api, err := t.HTTPAPI()
	if err != nil || api == nil {
		return nil
	}
	return api.Routes
}
