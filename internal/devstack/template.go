package devstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/heraldhq/herald/internal/devstack/controlplane"
)

// Local pseudo parameters: the emulators' account and region.
const (
	LocalRegion    = "us-east-1"
	LocalAccountID = "000000000000"
)

// Template is template.yaml parsed with goformation, with intrinsic functions
// resolved for the local stack: parameters take their overrides or defaults,
// and references to resources become placeholders "${ref:Name}" and
// "${getatt:Name.Attr}" that Resources.Resolve replaces once the resources
// exist locally.
type Template struct {
	*cloudformation.Template
	Params map[string]string
	// SystemLogLevel is Globals.Function.LoggingConfig.SystemLogLevel
	// (goformation's Globals do not carry it).
	SystemLogLevel string
	// Resolved is the resolved template as JSON, as the control-plane
	// check reads it.
	Resolved []byte
	// Document is the whole template as plain JSON values after parameter
	// resolution, before normalize sets aside what goformation's schema
	// does not know (WarmThroughput, RouteSettings…): for readers such as the
	// capacity model.
	Document map[string]any
}

var placeholder = regexp.MustCompile(`\$\{(ref|getatt):([A-Za-z0-9]+)(?:\.([A-Za-z0-9.]+))?\}`)

// LoadTemplate parses path with parameter overrides (name → value).
func LoadTemplate(path string, overrides map[string]string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	return ParseTemplate(raw, overrides)
}

// ParseTemplate parses template YAML; see LoadTemplate.
func ParseTemplate(raw []byte, overrides map[string]string) (*Template, error) {
	var head struct {
		Parameters map[string]parameter `json:"Parameters"`
		Globals    struct {
			Function struct {
				LoggingConfig struct {
					SystemLogLevel string `json:"SystemLogLevel"`
				} `json:"LoggingConfig"`
			} `json:"Function"`
		} `json:"Globals"`
	}
	plain, err := intrinsics.ProcessYAML(raw, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	if err := json.Unmarshal(plain, &head); err != nil {
		return nil, fmt.Errorf("parse template parameters: %w", err)
	}
	params := map[string]string{}
	typed := map[string]any{}
	for name, p := range head.Parameters {
		v := fmt.Sprint(p.Default)
		if p.Default == nil {
			v = ""
		}
		if o, ok := overrides[name]; ok {
			v = o
		}
		if p.Default != nil || overrides[name] != "" {
			// As CloudFormation checks them at deploy time. A parameter
			// without a default nor a value stays empty: template tests
			// read the template without deploying it.
			if err := p.check(v); err != nil {
				return nil, fmt.Errorf("parameter %s: %w", name, err)
			}
		}
		params[name] = v
		typed[name] = v
		if p.Type == "CommaDelimitedList" {
			// Ref to a list parameter is the list, as CloudFormation makes it.
			list := []any{}
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					list = append(list, item)
				}
			}
			typed[name] = list
		}
		if p.Type == "Number" && v == "" && p.Default == nil {
			// Required and not given: template tests read it without deploying.
			typed[name] = ""
		} else if p.Type == "Number" {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("parameter %s: %q is not a number", name, v)
			}
			typed[name] = n
		}
	}
	for name := range overrides {
		if _, ok := params[name]; !ok {
			return nil, fmt.Errorf("override for unknown parameter %s", name)
		}
	}
	ref := func(_ string, input any, _ any) any {
		name, _ := input.(string)
		switch name {
		case "AWS::Region":
			return LocalRegion
		case "AWS::AccountId":
			return LocalAccountID
		case "AWS::Partition":
			return "aws"
		case "AWS::URLSuffix":
			return "amazonaws.com"
		case "AWS::StackName":
			return LocalStackName // the IAM model's stack: names built from it match its roles' grants
		case "AWS::NoValue":
			return nil
		}
		if v, ok := typed[name]; ok {
			return v
		}
		return "${ref:" + name + "}"
	}
	getAtt := func(_ string, input any, _ any) any {
		switch v := input.(type) {
		case []any:
			if len(v) == 2 {
				return fmt.Sprintf("${getatt:%v.%v}", v[0], v[1])
			}
		case string:
			return "${getatt:" + v + "}"
		}
		return nil
	}
	// The plain JSON above is the YAML as ProcessYAML converts it before
	// resolving (short-form tags in long form): resolving it is resolving
	// the YAML, without parsing the YAML a second time (a third of a
	// parse's CPU; every template test and stack start parses).
	resolved, err := intrinsics.ProcessJSON(plain, &intrinsics.ProcessorOptions{
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{"Ref": ref, "Fn::GetAtt": getAtt},
	})
	if err != nil {
		return nil, fmt.Errorf("resolve template: %w", err)
	}
	var whole map[string]any
	if err := json.Unmarshal(resolved, &whole); err != nil {
		return nil, fmt.Errorf("resolve template: %w", err)
	}
	resolved, err = normalize(resolved)
	if err != nil {
		return nil, err
	}
	// What AWS's control plane would refuse, the local stack refuses too.
	if err := controlplane.Check(resolved, controlplane.Options{}); err != nil {
		return nil, err
	}
	tmpl, err := goformation.ParseJSONWithOptions(resolved, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		return nil, fmt.Errorf("load template: %w", err)
	}
	return &Template{Template: tmpl, Params: params, SystemLogLevel: head.Globals.Function.LoggingConfig.SystemLogLevel, Resolved: resolved, Document: whole}, nil
}

// parameter is a template parameter with the constraints CloudFormation
// enforces on its value.
type parameter struct {
	Type           string   `json:"Type"`
	Default        any      `json:"Default"`
	AllowedPattern string   `json:"AllowedPattern"`
	AllowedValues  []any    `json:"AllowedValues"`
	MinValue       *float64 `json:"MinValue"`
	MaxValue       *float64 `json:"MaxValue"`
}

func (p parameter) check(v string) error {
	if p.AllowedPattern != "" {
		re, err := regexp.Compile(p.AllowedPattern)
		if err != nil {
			return fmt.Errorf("AllowedPattern %q: %w", p.AllowedPattern, err)
		}
		// CloudFormation matches the whole value.
		if loc := re.FindStringIndex(v); loc == nil || loc[0] != 0 || loc[1] != len(v) {
			return fmt.Errorf("%q does not match AllowedPattern %s", v, p.AllowedPattern)
		}
	}
	if len(p.AllowedValues) > 0 {
		ok := false
		for _, a := range p.AllowedValues {
			ok = ok || fmt.Sprint(a) == v
		}
		if !ok {
			return fmt.Errorf("%q is not one of AllowedValues %v", v, p.AllowedValues)
		}
	}
	if p.Type == "Number" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		if (p.MinValue != nil && n < *p.MinValue) || (p.MaxValue != nil && n > *p.MaxValue) {
			return fmt.Errorf("%v is outside [%v, %v]", n, ptrString(p.MinValue), ptrString(p.MaxValue))
		}
	}
	return nil
}

func ptrString(f *float64) string {
	if f == nil {
		return "-"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

// normalize prepares resolved JSON for goformation's typed model: numeric
// environment values (a Ref to a Number parameter) become strings, as
// CloudFormation makes them, and SAM properties newer than goformation's
// schema (HttpApi Auth.EnableIamAuthorizer, AccessLogSettings,
// RouteSettings; the table's and indexes' WarmThroughput) are set aside: the
// runner plays neither IAM authorization, access logs, throttles nor warm
// throughput (Template.Document keeps them).
func normalize(doc []byte) ([]byte, error) {
	var t map[string]any
	if err := json.Unmarshal(doc, &t); err != nil {
		return nil, err
	}
	fix := func(props map[string]any) {
		env, _ := props["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			if _, ok := v.(string); !ok && v != nil {
				vars[k] = fmt.Sprint(v)
			}
		}
	}
	resources, _ := t["Resources"].(map[string]any)
	for _, r := range resources {
		res, _ := r.(map[string]any)
		props, _ := res["Properties"].(map[string]any)
		fix(props)
		if res["Type"] == "AWS::Serverless::HttpApi" {
			if auth, ok := props["Auth"].(map[string]any); ok {
				delete(auth, "EnableIamAuthorizer")
			}
			delete(props, "AccessLogSettings")
			delete(props, "RouteSettings")
		}
		if res["Type"] == "AWS::DynamoDB::Table" {
			delete(props, "WarmThroughput")
			gsis, _ := props["GlobalSecondaryIndexes"].([]any)
			for _, g := range gsis {
				if g, ok := g.(map[string]any); ok {
					delete(g, "WarmThroughput")
				}
			}
		}
	}
	if g, ok := t["Globals"].(map[string]any); ok {
		if f, ok := g["Function"].(map[string]any); ok {
			fix(f)
		}
	}
	return json.Marshal(t)
}

// FunctionSpec is a function as the runner needs it.
type FunctionSpec struct {
	LogicalID string
	Env       map[string]string // values may hold placeholders
	Timeout   int               // seconds
	Schedule  string            // "rate(1 minute)" for scheduled functions
	// MemorySize in MB (Lambda bills duration × memory).
	MemorySize int
	// Tracing is the X-Ray mode ("Active" records sampled traces, which
	// X-Ray bills per trace; "" or "PassThrough" records none of its own).
	Tracing string
}

// Route is an HTTP API route.
type Route struct {
	Method, Path string
	Function     string
	// Auth is the authorizer: "AWS_IAM" (the API default) or a JWT authorizer's name.
	Auth string
	// Scopes are the route's AuthorizationScopes (JWT routes): a token needs one.
	Scopes []string
}

// Key is the API Gateway route key, "POST /v1/notifications".
func (r Route) Key() string { return r.Method + " " + r.Path }

// Functions lists the serverless functions with effective settings.
func (t *Template) Functions() []FunctionSpec {
	defTimeout, defMemory := 3, 128
	defTracing, _ := t.globalFunction()["Tracing"].(string)
	if g, ok := t.globalFunction()["MemorySize"].(float64); ok {
		defMemory = int(g)
	}
	if g, ok := t.globalFunction()["Timeout"].(float64); ok {
		defTimeout = int(g)
	}
	// SAM merges Globals.Function.Environment.Variables into each function's.
	var global struct {
		Environment struct{ Variables map[string]string }
	}
	if raw, err := json.Marshal(t.globalFunction()); err == nil {
		_ = json.Unmarshal(raw, &global)
	}
	var out []FunctionSpec
	for id, fn := range t.GetAllServerlessFunctionResources() {
		spec := FunctionSpec{LogicalID: id, Env: map[string]string{}, Timeout: defTimeout, MemorySize: defMemory, Tracing: defTracing}
		if fn.Tracing != nil {
			spec.Tracing = *fn.Tracing
		}
		if fn.MemorySize != nil {
			spec.MemorySize = *fn.MemorySize
		}
		if fn.Timeout != nil {
			spec.Timeout = *fn.Timeout
		}
		maps.Copy(spec.Env, global.Environment.Variables)
		if fn.Environment != nil {
			maps.Copy(spec.Env, fn.Environment.Variables)
		}
		for _, ev := range fn.Events {
			if ev.Type == "Schedule" && ev.Properties != nil && ev.Properties.ScheduleEvent != nil {
				spec.Schedule = ev.Properties.ScheduleEvent.Schedule
			}
		}
		out = append(out, spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out
}

func (t *Template) globalFunction() map[string]any {
	raw, err := json.Marshal(t.Globals["Function"])
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// GlobalFunction returns the Globals.Function section as plain JSON values.
func (t *Template) GlobalFunction() map[string]any { return t.globalFunction() }

// Routes lists the HTTP API routes declared as HttpApi events, sorted.
func (t *Template) Routes() []Route {
	var out []Route
	for id, fn := range t.GetAllServerlessFunctionResources() {
		for _, ev := range fn.Events {
			if ev.Type != "HttpApi" || ev.Properties == nil {
				continue
			}
			r, ok := httpRoute(ev.Properties)
			if !ok {
				continue
			}
			r.Function = id
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// httpRoute reads an HttpApi event's properties. goformation decodes event
// properties as a union and may pick a look-alike member, so the properties
// are re-read as plain JSON.
func httpRoute(p *serverless.Function_Properties) (Route, bool) {
	raw, err := json.Marshal(p)
	if err != nil {
		return Route{}, false
	}
	var v struct {
		Method, Path string
		Auth         *struct {
			Authorizer          string
			AuthorizationScopes []string
		}
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.Path == "" {
		return Route{}, false
	}
	r := Route{Method: strings.ToUpper(v.Method), Path: v.Path, Auth: "AWS_IAM"}
	if v.Auth != nil && v.Auth.Authorizer != "" {
		r.Auth = v.Auth.Authorizer
	}
	if v.Auth != nil {
		r.Scopes = v.Auth.AuthorizationScopes
	}
	return r, true
}

// CheckRelease checks the stack update from the released template (the
// commit RELEASED names, read from root's git history) to the template at
// path: the update rules of internal/devstack/controlplane. A tree without
// the marker or git history is not checked (log says so).
func CheckRelease(root, path string, log *slog.Logger) error {
	released, rev, err := controlplane.ReleasedTemplate(root)
	if errors.Is(err, controlplane.ErrNoRelease) {
		if log != nil {
			log.Warn("stack update rules not checked", "reason", err.Error())
		}
		return nil
	}
	if err != nil {
		return err
	}
	next, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read template: %w", err)
	}
	if err := controlplane.CheckUpdate(released, next); err != nil {
		return fmt.Errorf("update from the released template (%s): %w", rev, err)
	}
	notes, err := controlplane.UpdateNotes(released, next)
	if err != nil {
		return err
	}
	for _, n := range notes {
		if log != nil {
			log.Warn("release note: the stack update from the released template needs a plan", "released", rev, "resource", n.Resource, "rule", n.Rule, "note", n.Message)
		}
	}
	return nil
}
