package attack

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// bodyKinds reads, for every operation of openapi.yaml, the media type of
// its request body ("" for none), by route key.
func bodyKinds(t *testing.T) map[string]string {
	t.Helper()
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for path, item := range doc.Paths {
		for method, v := range item {
			op, ok := v.(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			kind := ""
			if rb, ok := op["requestBody"].(map[string]any); ok {
				for mt := range rb["content"].(map[string]any) {
					kind = mt
				}
			}
			out[strings.ToUpper(method)+" "+path] = kind
		}
	}
	return out
}

// hostileBodyRequests are, for every POST, PUT and PATCH route of the
// template (a route added later is in it), bodies the OpenAPI document
// promises to refuse: unknown members, invalid UTF-8 and trailing data on a
// JSON route, any body on a route that takes none, JSON on the form route.
func hostileBodyRequests(t *testing.T, st *devstack.Stack, user string) []hostile {
	kinds := bodyKinds(t)
	variable := regexp.MustCompile(`\{([^}]+)\}`)
	var out []hostile
	for _, r := range st.Template.Routes() {
		if r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodPatch {
			continue
		}
		kind, ok := kinds[r.Key()]
		if !ok {
			t.Errorf("%s: no operation in openapi.yaml", r.Key())
			continue
		}
		path := variable.ReplaceAllStringFunc(r.Path, func(v string) string {
			switch {
			case v == "{userId}":
				return user
			case strings.HasPrefix(r.Path, "/v1/campaigns/"):
				return "c" + strings.Repeat("0", 26)
			}
			return "n" + strings.Repeat("0", 26)
		})
		token := ""
		if r.Auth != "AWS_IAM" && r.Auth != "NONE" {
			token = user
		}
		if r.Auth == "NONE" {
			path += "?token=" + strings.Repeat("A", 40)
		}
		add := func(name, body string, header http.Header, status int, outcome string) {
			out = append(out, hostile{name: r.Key() + ": " + name, method: r.Method, path: path, body: body, header: header, token: token, status: status, outcome: outcome})
		}
		switch kind {
		case "application/json":
			add("unknown member", `{"zzUnknown":1}`, jsonHeader(), 400, "unknown_field")
			add("invalid UTF-8", "{\"zzUnknown\":\"\xff\"}", jsonHeader(), 400, "invalid_json")
			add("trailing data", `{} x`, jsonHeader(), 400, "invalid_json")
			add("an array", `[]`, jsonHeader(), 400, "invalid_json")
		case "application/x-www-form-urlencoded":
			add("JSON instead of the form", `{"List-Unsubscribe":"One-Click"}`, jsonHeader(), 415, "unsupported_media_type")
		case "":
			add("a body where none is taken", `{"a":1,"a":2}`, jsonHeader(), 400, "unexpected_body")
		default:
			t.Errorf("%s: request body %s: the corpus knows JSON and forms", r.Key(), kind)
		}
	}
	return out
}

// Hostile bodies on every body route of the template, through the runner's
// gateway: each refused with its stable code, nothing written or sent.
func TestHostileBodiesOnEveryBodyRoute(t *testing.T) {
	st := stacktest.Stack(t)
	user := stacktest.UniqueID("bodies")
	corpus := hostileBodyRequests(t, st, user)
	if len(corpus) < 40 {
		t.Fatalf("%d requests: the template's body routes were not all found", len(corpus))
	}
	before, table := sent(t), tableDigest(t)
	for _, h := range corpus {
		t.Run(h.name, func(t *testing.T) {
			header := h.header.Clone()
			if h.token != "" {
				header.Set("Authorization", "Bearer "+st.Token(h.token, time.Hour))
			}
			status, raw, _ := request(t, h.method, h.path, []byte(h.body), header)
			if status != h.status || outcome(raw) != h.outcome {
				t.Fatalf("%d %s, want %d %s", status, trim(raw), h.status, h.outcome)
			}
		})
	}
	if after := tableDigest(t); after != table {
		t.Errorf("the table changed: %s → %s", table, after)
	}
	if after := sent(t); after != before {
		t.Fatalf("sinks went from %v to %v", before, after)
	}
}
