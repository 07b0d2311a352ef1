package api_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// implementedElsewhere are routes declared in template.yaml and described in
// openapi.yaml whose handlers other issues have not landed yet. The test
// fails when one of them becomes served, so the list only shrinks: remove a
// route from here when its handler lands. (Empty: inbox and announcements,
// issue 5, are served.)
var implementedElsewhere = []string{}

// pendingInTemplate are routes described in openapi.yaml that template.yaml
// does not declare yet. The test fails when the template declares one (remove
// it from here) or when the spec drops it. (Empty: the unsubscribe link,
// issue 4, is routed.)
var pendingInTemplate = []string{}

// codesImplementedElsewhere are problem codes openapi.yaml documents for
// handlers other issues add. The test fails when the handler answers one:
// remove it from here then. (Empty: the unsubscribe codes, issue 4, are
// answered.)
var codesImplementedElsewhere = []string{}

var methods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

type openapiDoc struct {
	raw   map[string]any
	paths map[string]map[string]any // path → method → operation
}

func loadSpec(t *testing.T) (*openapiDoc, string) {
	t.Helper()
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := &openapiDoc{paths: map[string]map[string]any{}}
	if err := yaml.Unmarshal(b, &d.raw); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if v, _ := d.raw["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi = %q, want 3.1.x", v)
	}
	paths, _ := d.raw["paths"].(map[string]any)
	for p, item := range paths {
		ops := map[string]any{}
		for k, v := range item.(map[string]any) {
			if slices.Contains(methods, k) {
				ops[k] = v
			}
		}
		d.paths[p] = ops
	}
	return d, root
}

func (d *openapiDoc) routes() []string {
	var out []string
	for p, ops := range d.paths {
		for m := range ops {
			out = append(out, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(out)
	return out
}

func (d *openapiDoc) operation(route string) map[string]any {
	m, p, _ := strings.Cut(route, " ")
	op, _ := d.paths[p][strings.ToLower(m)].(map[string]any)
	return op
}

// resolve follows a local $ref.
func (d *openapiDoc) resolve(t *testing.T, v any) map[string]any {
	t.Helper()
	m, _ := v.(map[string]any)
	ref, ok := m["$ref"].(string)
	if !ok {
		return m
	}
	var cur any = d.raw
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		next, ok := cur.(map[string]any)[part]
		if !ok {
			t.Fatalf("dangling $ref %s", ref)
		}
		cur = next
	}
	return d.resolve(t, cur)
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	spec, root := loadSpec(t)
	tmpl, err := devstack.LoadTransformed(context.Background(), root, filepath.Join(root, "template.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	inSpec := spec.routes()
	served := api.New(api.Deps{}).Routes()
	templateAuth := map[string]string{}
	for _, r := range tmpl.Routes() {
		if r.Function == "ApiFunction" {
			templateAuth[r.Key()] = r.Auth
		}
	}
	for _, r := range served {
		if !slices.Contains(inSpec, r) {
			t.Errorf("the handler serves %s but openapi.yaml does not describe it", r)
		}
		if _, ok := templateAuth[r]; !ok {
			t.Errorf("the handler serves %s but template.yaml does not route it", r)
		}
	}
	for r := range templateAuth {
		if !slices.Contains(inSpec, r) {
			t.Errorf("template.yaml routes %s but openapi.yaml does not describe it", r)
		}
		switch {
		case slices.Contains(implementedElsewhere, r) && slices.Contains(served, r):
			t.Errorf("%s is served now: remove it from implementedElsewhere", r)
		case !slices.Contains(implementedElsewhere, r) && !slices.Contains(served, r):
			t.Errorf("template.yaml routes %s to ApiFunction but the handler does not serve it", r)
		}
	}
	for _, r := range inSpec {
		_, routed := templateAuth[r]
		switch {
		case routed && slices.Contains(pendingInTemplate, r):
			t.Errorf("template.yaml routes %s now: remove it from pendingInTemplate", r)
		case !routed && !slices.Contains(pendingInTemplate, r):
			t.Errorf("openapi.yaml describes %s but template.yaml does not route it", r)
		}
	}
	for _, r := range pendingInTemplate {
		if !slices.Contains(inSpec, r) {
			t.Errorf("pendingInTemplate lists %s, which openapi.yaml does not describe", r)
		}
	}
	// The spec's security matches the template's authorizer.
	for r, auth := range templateAuth {
		op := spec.operation(r)
		if op == nil {
			continue
		}
		scheme := "iam" // the document's default
		if sec, ok := op["security"].([]any); ok {
			scheme = ""
			for _, s := range sec {
				for name := range s.(map[string]any) {
					scheme = name
				}
			}
		}
		want := map[string]string{"AWS_IAM": "iam", "UserJwt": "userJwt", "NONE": ""}[auth]
		if scheme != want {
			t.Errorf("%s: openapi security %q, template authorizer %q", r, scheme, auth)
		}
	}
}

func TestOpenAPIOperationsAreComplete(t *testing.T) {
	spec, _ := loadSpec(t)
	ids := map[string]string{}
	for _, r := range spec.routes() {
		op := spec.operation(r)
		id, _ := op["operationId"].(string)
		if id == "" {
			t.Errorf("%s has no operationId", r)
		} else if other, dup := ids[id]; dup {
			t.Errorf("operationId %s used by %s and %s", id, other, r)
		}
		ids[id] = r
		responses, _ := op["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s documents no responses", r)
		}
		success := false
		for status, resp := range responses {
			if status[0] == '2' {
				success = true
				continue
			}
			content, _ := spec.resolve(t, resp)["content"].(map[string]any)
			pj, ok := content["application/problem+json"].(map[string]any)
			if !ok || spec.resolve(t, pj["schema"])["required"] == nil {
				t.Errorf("%s %s is not a problem+json response", r, status)
			}
		}
		if !success {
			t.Errorf("%s documents no success response", r)
		}
		if body, ok := op["requestBody"]; ok {
			for mt, c := range spec.resolve(t, body)["content"].(map[string]any) {
				spec.resolve(t, c.(map[string]any)["schema"])
				_ = mt
			}
		}
	}
	// Every $ref anywhere resolves.
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["$ref"]; ok {
				spec.resolve(t, v)
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(spec.raw)
}

// TestOpenAPIListsEveryProblemCode keeps the documented codes and the codes
// the handler can answer equal.
func TestOpenAPIListsEveryProblemCode(t *testing.T) {
	spec, root := loadSpec(t)
	problem := spec.resolve(t, map[string]any{"$ref": "#/components/schemas/Problem"})
	var documented []string
	for _, c := range problem["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any) {
		documented = append(documented, c.(string))
	}
	used := map[string]bool{}
	patterns := []*regexp.Regexp{
		regexp.MustCompile(`Code:\s*"([a-z0-9_]+)"`),
		regexp.MustCompile(`fieldProblem\([^,]+,\s*"([a-z0-9_]+)"`),
		regexp.MustCompile(`\bcode\s*:?=\s*"([a-z0-9_]+)"`),
	}
	files, _ := filepath.Glob(filepath.Join(root, "internal", "api", "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range patterns {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				used[m[1]] = true
			}
		}
	}
	if len(used) < 30 {
		t.Fatalf("found only %d codes in the source: the scan is broken", len(used))
	}
	for c := range used {
		if !slices.Contains(documented, c) {
			t.Errorf("the handler answers code %q, which openapi.yaml does not list", c)
		}
	}
	for _, c := range documented {
		switch elsewhere := slices.Contains(codesImplementedElsewhere, c); {
		case used[c] && elsewhere:
			t.Errorf("the handler answers %q now: remove it from codesImplementedElsewhere", c)
		case !used[c] && !elsewhere:
			t.Errorf("openapi.yaml lists code %q, which the handler never answers", c)
		}
	}
}

// TestOpenAPIListsEveryDeliveryReason: the Delivery schema's reason
// examples name every reason a delivery can carry (the Reason constants of
// internal/domain/delivery.go), so a new one — `muted` from a topic send —
// is documented where clients look.
func TestOpenAPIListsEveryDeliveryReason(t *testing.T) {
	d, root := loadSpec(t)
	src, err := os.ReadFile(filepath.Join(root, "internal", "domain", "delivery.go"))
	if err != nil {
		t.Fatal(err)
	}
	delivery := d.resolve(t, map[string]any{"$ref": "#/components/schemas/Delivery"})
	props, _ := delivery["properties"].(map[string]any)
	reason, _ := props["reason"].(map[string]any)
	examples, _ := reason["examples"].([]any)
	consts := regexp.MustCompile(`(?m)^\s*Reason\w+\s+Reason = "([a-z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(consts) < 10 {
		t.Fatalf("found %d Reason constants in delivery.go: the pattern no longer matches", len(consts))
	}
	for _, m := range consts {
		if !slices.Contains(examples, any(m[1])) {
			t.Errorf("openapi.yaml Delivery.reason examples lack %q", m[1])
		}
	}
}
