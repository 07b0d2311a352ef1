package dynamo_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/campaign"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/feedback"
	"github.com/heraldhq/herald/internal/live"
	"github.com/heraldhq/herald/internal/ops"
	"github.com/heraldhq/herald/internal/push"
	"github.com/heraldhq/herald/internal/relay"
	"github.com/heraldhq/herald/internal/scheduler"
	"github.com/heraldhq/herald/internal/worker"
)

// consumerFeatures are the consumers' interfaces a feature store serves,
// by feature.
var consumerFeatures = map[string][]reflect.Type{
	"notifications and deliveries": {
		reflect.TypeFor[api.NotificationStore](), reflect.TypeFor[worker.Store](),
	},
	"inbox and announcements": {
		reflect.TypeFor[api.InboxStore](), reflect.TypeFor[api.AnnouncementStore](), reflect.TypeFor[live.BadgeStore](),
		reflect.TypeFor[live.AnnouncementMarker](), reflect.TypeFor[live.BroadcastProgress](),
	},
	"campaigns": {reflect.TypeFor[api.CampaignStore]()},
	"users": {
		reflect.TypeFor[api.UserStore](), reflect.TypeFor[api.PushSubscriptionStore](), reflect.TypeFor[api.PreferenceStore](),
		reflect.TypeFor[api.UnsubscribeStore](), reflect.TypeFor[api.DeviceStore](), reflect.TypeFor[push.Subscriptions](),
		reflect.TypeFor[api.BudgetPreferenceStore](),
		reflect.TypeFor[push.Devices](),
	},
	"live": {
		reflect.TypeFor[api.PresenceStore](), reflect.TypeFor[live.ConnectionStore](), reflect.TypeFor[live.PresenceStore](),
		reflect.TypeFor[live.OnlineStore](), reflect.TypeFor[live.OnlineReader](), reflect.TypeFor[live.ConnectionReader](),
		reflect.TypeFor[live.ConnectionEvictor](),
	},
	"scheduling and watches":   {reflect.TypeFor[ops.Watches](), reflect.TypeFor[ops.RelayFailures]()},
	"quotas and rate counters": {reflect.TypeFor[worker.QuotaStore]()},
	"digests":                  {reflect.TypeFor[worker.DigestStore]()},
	"budgets":                  {reflect.TypeFor[relay.BudgetStore]()},
	"history":                  {reflect.TypeFor[api.HistoryStore]()},
	"provider breakers":        {reflect.TypeFor[worker.BreakerStore]()},
	"topics":                   {reflect.TypeFor[api.TopicStore]()},
}

// crossFeature are the consumers' interfaces that span features: their
// wiring composes the feature stores they use (internal/app), so no one
// store serves them.
var crossFeature = []reflect.Type{
	reflect.TypeFor[relay.Store](), reflect.TypeFor[scheduler.Store](), reflect.TypeFor[scheduler.WatchStore](),
	reflect.TypeFor[campaign.Store](), reflect.TypeFor[feedback.Store](), reflect.TypeFor[ops.Store](),
}

// storeTypes are the feature stores (dynamo.Stores' fields) and the shared
// table client.
func storeTypes(t *testing.T) []reflect.Type {
	t.Helper()
	out := []reflect.Type{reflect.TypeFor[*dynamo.Table]()}
	st := reflect.TypeFor[dynamo.Stores]()
	for i := range st.NumField() {
		out = append(out, st.Field(i).Type)
	}
	return out
}

// TestOneFeaturePerStore: each type in internal/dynamo serves the consumer
// interfaces of one feature only (issue 37: one room per feature), the
// shared table client none, and no type serves an interface that spans
// features (the wiring composes those).
func TestOneFeaturePerStore(t *testing.T) {
	served := map[string]bool{}
	for _, typ := range storeTypes(t) {
		var features []string
		for f, ifaces := range consumerFeatures {
			for _, it := range ifaces {
				if typ.Implements(it) {
					features = append(features, f+" ("+it.String()+")")
					served[f] = true
					break
				}
			}
		}
		slices.Sort(features)
		switch {
		case typ == reflect.TypeFor[*dynamo.Table]() && len(features) > 0:
			t.Errorf("the shared %s serves %v: feature methods belong to a feature store", typ, features)
		case len(features) > 1:
			t.Errorf("%s serves %d features: %s", typ, len(features), strings.Join(features, "; "))
		case typ != reflect.TypeFor[*dynamo.Table]() && len(features) == 0:
			t.Errorf("%s serves no consumer interface: add its feature to consumerFeatures", typ)
		}
		for _, it := range crossFeature {
			if typ.Implements(it) {
				t.Errorf("%s serves %s, which spans features: compose it in the wiring", typ, it)
			}
		}
	}
	for f := range consumerFeatures {
		if !served[f] {
			t.Errorf("no store serves %s", f)
		}
	}
}

// TestEveryStoreIsListed: every type with exported methods in the
// package's non-test files is the table client or a feature store of dynamo.Stores,
// so a new store cannot escape TestOneFeaturePerStore.
func TestEveryStoreIsListed(t *testing.T) {
	listed := map[string]bool{}
	for _, typ := range storeTypes(t) {
		listed[typ.Elem().Name()] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	receivers := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() {
				continue
			}
			recv := fn.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			if id, ok := recv.(*ast.Ident); ok {
				receivers[id.Name] = true
			}
		}
	}
	if len(receivers) < 5 {
		t.Fatalf("found only %d receiver types (%v): the parser misses them", len(receivers), receivers)
	}
	for r := range receivers {
		if !listed[r] {
			t.Errorf("%s has exported methods but is neither the Table nor a store of dynamo.Stores", r)
		}
	}
}

// TestArchitectureDrawsTheStoreRooms: docs/architecture.md's "The store's
// rooms" draws every feature store of dynamo.Stores, and no other.
func TestArchitectureDrawsTheStoreRooms(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## The store's rooms\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## The store's rooms" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	drawn := map[string]bool{}
	for _, m := range regexp.MustCompile(`[├└]─ (\w+) ─`).FindAllStringSubmatch(section, -1) {
		drawn[m[1]] = true
	}
	st := reflect.TypeFor[dynamo.Stores]()
	for i := range st.NumField() {
		name := st.Field(i).Type.Elem().Name()
		if !drawn[name] {
			t.Errorf("the store %s is not drawn in \"The store's rooms\"", name)
		}
		delete(drawn, name)
	}
	for name := range drawn {
		t.Errorf("\"The store's rooms\" draws %s, which is not in dynamo.Stores", name)
	}
}
