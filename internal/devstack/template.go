package devstack

import (
	"context"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/heraldhq/herald/internal/devstack/cfnyaml"
	"github.com/heraldhq/herald/internal/devstack/controlplane"
)

// Local pseudo parameters: the emulators' account and region.
const (
	LocalRegion    = "us-east-1"
	LocalAccountID = "000000000000"
)

// Template is a template parsed with goformation, with intrinsic functions
// resolved for the local stack: parameters take their overrides or defaults,
// and references to resources become placeholders "${ref:Name}" and
// "${getatt:Name.Attr}" that Resources.Resolve replaces once the resources
// exist locally.
//
// Two forms are read: the template as written (LoadTemplate: SAM resources,
// for the template tests and herald capacity) and the template as the SAM
// transform hands it to CloudFormation (LoadTransformed, ParseTransformed:
// CloudFormation resources only), which is what the local runner plays.
type Template struct {
	*cloudformation.Template
	Params map[string]string
	// SystemLogLevel is the functions' LoggingConfig.SystemLogLevel: SAM's
	// Globals.Function (goformation's Globals do not carry it), or in a
	// transformed template the level every function has ("" when they
	// differ).
	SystemLogLevel string
	// Resolved is the resolved template as JSON, as the control-plane
	// check reads it.
	Resolved []byte
	// Document is the whole template as plain JSON values after parameter
	// resolution, before normalize sets aside what goformation's schema
	// does not know (WarmThroughput, RouteSettings…): for readers such as the
	// capacity model and the HTTP API's OpenAPI body.
	Document map[string]any
}

var placeholder = regexp.MustCompile(`\$\{(ref|getatt):([A-Za-z0-9]+)(?:\.([A-Za-z0-9.]+))?\}`)

// LoadTemplate parses path with parameter overrides (name → value): the
// template as written, SAM resources included.
func LoadTemplate(path string, overrides map[string]string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	return ParseTemplate(raw, overrides)
}

// ParseTemplate parses template YAML; see LoadTemplate.
func ParseTemplate(raw []byte, overrides map[string]string) (*Template, error) {
	// The plain JSON is the YAML as ProcessYAML converts it before resolving
	// (short-form tags in long form): resolving it is resolving the YAML,
	// without parsing the YAML a second time.
	plain, err := cfnyaml.ToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	return parseDocument(plain, overrides)
}

// LoadTransformed runs the SAM transform of the template at path (default
// root/template.yaml) as CloudFormation would before a deploy
// (iam.Transform: scripts/iam/transform.py, cached under root/.cache/iam)
// and parses its output with the parameter overrides: the document
// CloudFormation receives.
//
// The transform is given the runner's platform applications only, whatever
// the overrides, so every caller shares one cached transform per template:
// its output does not depend on parameter values
// (TestTransformIgnoresTheRunnersParameters), CloudFormation resolves them.
func LoadTransformed(ctx context.Context, root, path string, overrides map[string]string) (*Template, error) {
	p, err := transform(ctx, root, path, WithLocalPlatformApplications(nil))
	if err != nil {
		return nil, err
	}
	return ParseTransformed(p.Template, overrides)
}

// ParseTransformed parses the SAM transform's output template
// (iam.Policies.Template, JSON) with parameter overrides, as ParseTemplate
// parses a template as written.
func ParseTransformed(doc []byte, overrides map[string]string) (*Template, error) {
	if len(doc) == 0 {
		return nil, errors.New("parse transformed template: empty (scripts/iam/transform.py prints it as \"template\")")
	}
	t, err := parseDocument(doc, overrides)
	if err != nil {
		return nil, err
	}
	if len(t.GetAllServerlessFunctionResources()) > 0 || len(t.GetAllServerlessHttpApiResources()) > 0 {
		return nil, errors.New("parse transformed template: it still has SAM resources")
	}
	levels := map[string]bool{}
	for _, fn := range t.GetAllLambdaFunctionResources() {
		level := ""
		if fn.LoggingConfig != nil {
			level = aws.ToString(fn.LoggingConfig.SystemLogLevel)
		}
		levels[level] = true
	}
	if len(levels) == 1 {
		for level := range levels {
			t.SystemLogLevel = level
		}
	}
	return t, nil
}

// TemplateParams are a template's parameter values with the overrides
// applied and checked as CloudFormation checks them, without resolving the
// rest of the template (doc is JSON: the transform's output, or a template
// as ProcessYAML converts it).
func TemplateParams(doc []byte, overrides map[string]string) (map[string]string, error) {
	var head templateHead
	if err := json.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("parse template parameters: %w", err)
	}
	params, _, err := head.resolveParams(overrides)
	return params, err
}

// templateHead is what parseDocument reads before resolving.
type templateHead struct {
	Parameters map[string]parameter `json:"Parameters"`
	Globals    struct {
		Function struct {
			LoggingConfig struct {
				SystemLogLevel string `json:"SystemLogLevel"`
			} `json:"LoggingConfig"`
		} `json:"Function"`
	} `json:"Globals"`
}

// resolveParams gives each parameter its override or default, checked, as a
// string and as the value a Ref to it resolves to (a list for a
// CommaDelimitedList, a number for a Number).
func (head templateHead) resolveParams(overrides map[string]string) (params map[string]string, typed map[string]any, err error) {
	params, typed = map[string]string{}, map[string]any{}
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
				return nil, nil, fmt.Errorf("parameter %s: %w", name, err)
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
				return nil, nil, fmt.Errorf("parameter %s: %q is not a number", name, v)
			}
			typed[name] = n
		}
	}
	for name := range overrides {
		if _, ok := params[name]; !ok {
			return nil, nil, fmt.Errorf("override for unknown parameter %s", name)
		}
	}
	return params, typed, nil
}

// subVariable is a ${…} of an Fn::Sub string.
var subVariable = regexp.MustCompile(`\$\{([^}]*)\}`)

// parseDocument resolves and parses a template as JSON (ParseTemplate,
// ParseTransformed).
func parseDocument(plain []byte, overrides map[string]string) (*Template, error) {
	var head templateHead
	if err := json.Unmarshal(plain, &head); err != nil {
		return nil, fmt.Errorf("parse template parameters: %w", err)
	}
	params, typed, err := head.resolveParams(overrides)
	if err != nil {
		return nil, err
	}
	refValue := func(name string) any {
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
			return noValue
		}
		if v, ok := typed[name]; ok {
			return v
		}
		return "${ref:" + name + "}"
	}
	ref := func(_ string, input any, _ any) any {
		name, _ := input.(string)
		return refValue(name)
	}
	// Conditions are evaluated with the parameters' values, as CloudFormation
	// does at deploy time: Fn::If takes its branch, AWS::NoValue removes the
	// property, a resource whose condition is false is not created.
	conds, err := evaluateConditions(plain, refValue)
	if err != nil {
		return nil, err
	}
	var ifErr error
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
	// goformation's own Fn::Sub resolves ${Param} to the parameter's
	// default and drops ${Resource.Attr}; SAM's output names functions that
	// way (an HTTP API integration's URI), so Sub takes the same Ref and
	// GetAtt as the rest of the template.
	sub := func(_ string, input any, _ any) any {
		text, vars := "", map[string]any{}
		switch v := input.(type) {
		case string:
			text = v
		case []any:
			if len(v) != 2 {
				return nil
			}
			text, _ = v[0].(string)
			vars, _ = v[1].(map[string]any)
		default:
			return nil
		}
		return subVariable.ReplaceAllStringFunc(text, func(m string) string {
			name := m[2 : len(m)-1]
			if literal, ok := strings.CutPrefix(name, "!"); ok {
				return "${" + literal + "}"
			}
			if v, ok := vars[name]; ok {
				return scalarString(v)
			}
			if id, attr, ok := strings.Cut(name, "."); ok {
				return scalarString(getAtt("", []any{id, attr}, nil))
			}
			return scalarString(ref("", name, nil))
		})
	}
	resolved, err := intrinsics.ProcessJSON(plain, &intrinsics.ProcessorOptions{
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{"Ref": ref, "Fn::GetAtt": getAtt, "Fn::Sub": sub, "Fn::If": fnIf(conds, &ifErr)},
	})
	if err == nil {
		err = ifErr
	}
	if err != nil {
		return nil, fmt.Errorf("resolve template: %w", err)
	}
	var whole map[string]any
	if err := json.Unmarshal(resolved, &whole); err != nil {
		return nil, fmt.Errorf("resolve template: %w", err)
	}
	dropNoValue(whole, conds)
	if resolved, err = json.Marshal(whole); err != nil {
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
	tmpl, err := decodeTemplate(resolved)
	if err != nil {
		return nil, fmt.Errorf("load template: %w", err)
	}
	return &Template{Template: tmpl, Params: params, SystemLogLevel: head.Globals.Function.LoggingConfig.SystemLogLevel, Resolved: resolved, Document: whole}, nil
}

// scalarString is a resolved value as Fn::Sub inserts it.
func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
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

// Functions lists the functions with their effective settings: a
// transformed template's AWS::Lambda::Function resources (SAM merged its
// Globals into them; a schedule is an AWS::Events::Rule targeting the
// function), or a template's AWS::Serverless::Function resources with
// Globals.Function applied as SAM applies it.
func (t *Template) Functions() []FunctionSpec {
	out := t.lambdaFunctions()
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

// lambdaFunctions are the AWS::Lambda::Function resources, with Lambda's
// defaults (3 s, 128 MB) where a property is not set.
func (t *Template) lambdaFunctions() []FunctionSpec {
	schedules := map[string]string{} // function → schedule expression
	for _, r := range t.GetAllEventsRuleResources() {
		if r.ScheduleExpression == nil || (r.State != nil && *r.State != "ENABLED") {
			continue
		}
		for _, target := range r.Targets {
			if m := functionARN.FindStringSubmatch(target.Arn); m != nil {
				schedules[m[1]] = *r.ScheduleExpression
			}
		}
	}
	var out []FunctionSpec
	for id, fn := range t.GetAllLambdaFunctionResources() {
		spec := FunctionSpec{LogicalID: id, Env: map[string]string{}, Timeout: 3, MemorySize: 128, Schedule: schedules[id]}
		if fn.Timeout != nil {
			spec.Timeout = *fn.Timeout
		}
		if fn.MemorySize != nil {
			spec.MemorySize = *fn.MemorySize
		}
		if fn.TracingConfig != nil {
			spec.Tracing = aws.ToString(fn.TracingConfig.Mode)
		}
		if fn.Environment != nil {
			maps.Copy(spec.Env, fn.Environment.Variables)
		}
		out = append(out, spec)
	}
	return out
}

// functionARN is a resolved reference to a function's ARN.
var functionARN = regexp.MustCompile(`^\$\{getatt:([A-Za-z0-9]+)\.Arn\}$`)

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

// CheckRelease checks the stack update from the released template (the
// commit RELEASED names, read from root's git history) to the template at
// path: the update rules of internal/devstack/controlplane. A tree without
// the marker or git history is not checked (log says so). Release notes
// (an update CloudFormation accepts that needs a plan) concern a deploy,
// not a local run: make aws-check prints them (scripts/controlplane).
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
	return nil
}
