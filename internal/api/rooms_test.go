package api

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHandlersHoldOnlyWhatTheirRoutesUse: no API handler type has a field
// for routes it does not serve. The package's source is read: from each
// feature handler's route table (its routes method) every method it reaches
// on the handler, and on what the handler embeds, is followed, and every
// field of the handler, and of what it embeds (responder, preferenceRules),
// must be read or called on the way. The router's fields must be reached
// from Handle and Routes. A field only another feature's routes use, or none,
// fails here.
func TestHandlersHoldOnlyWhatTheirRoutesUse(t *testing.T) {
	src := parsePackage(t, ".")
	handlers := src.handlerTypes()
	var composed []string
	for _, f := range (Deps{}).features() {
		composed = append(composed, reflect.TypeOf(f).Elem().Name())
	}
	slices.Sort(composed)
	if !slices.Equal(handlers, composed) {
		t.Fatalf("types with a route table %v, router composes %v: each feature handler has a routes method and a place in Deps", handlers, composed)
	}
	for _, h := range handlers {
		for _, f := range src.unreached(h, "routes") {
			t.Errorf("%s.%s is not used by any route %s serves: give it to the handler whose routes use it", h, f, h)
		}
	}
	for _, f := range src.unreached("Handler", "Handle", "Routes") {
		t.Errorf("the router's field %s is not used by Handle or Routes", f)
	}
}

// TestRoomsCheckFindsAFieldOfAnotherRoute: the check fails on a handler with
// a field that only a method outside its route table reads, and on an
// embedded helper's field that no route reaches; it follows methods,
// closures, embedded methods and fields.
func TestRoomsCheckFindsAFieldOfAnotherRoute(t *testing.T) {
	const source = `package p
type responder struct{ log int }
func (r responder) fail() int { return r.log }
type rules struct {
	responder
	store int
	spare int
}
func (r *rules) read() int { return r.store + r.fail() }
type AHandler struct {
	rules
	a, b  int
	other int
	cache *rules
}
func (h *AHandler) routes() map[string]route {
	return map[string]route{"GET /a": service(h.getA)}
}
func (h *AHandler) getA() int { f := func() int { return h.helper() }; return h.a + h.read() + f() + h.cache.store }
func (h *AHandler) helper() int { return h.b }
func (h *AHandler) getOther() int { return h.other }
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", source, 0)
	if err != nil {
		t.Fatal(err)
	}
	src := newSourceTypes([]*ast.File{file})
	if got := src.handlerTypes(); !slices.Equal(got, []string{"AHandler"}) {
		t.Fatalf("handler types %v", got)
	}
	if got, want := src.unreached("AHandler", "routes"), []string{"other", "rules.spare"}; !slices.Equal(got, want) {
		t.Errorf("unreached %v, want %v", got, want)
	}
}

// TestRouterServesEachRouteOnce: the feature handlers' tables do not overlap,
// so the router's table is exactly their union (none hides another's route).
func TestRouterServesEachRouteOnce(t *testing.T) {
	owner := map[string]string{}
	for _, f := range (Deps{}).features() {
		name := reflect.TypeOf(f).Elem().Name()
		for key := range f.routes() {
			if other, dup := owner[key]; dup {
				t.Errorf("%s is served by %s and %s", key, other, name)
			}
			owner[key] = name
		}
	}
	if got := New(Deps{}).Routes(); len(got) != len(owner) {
		t.Errorf("router serves %d routes, the feature handlers %d", len(got), len(owner))
	}
}

// TestArchitectureDrawsTheAPIRooms holds docs/architecture.md's table of the
// API's handlers ("The API's rooms") to the code: each handler's row names
// its routes and the fields of its Deps.
func TestArchitectureDrawsTheAPIRooms(t *testing.T) {
	deps := map[string]reflect.Type{}
	for _, d := range []any{NotificationsDeps{}, CampaignsDeps{}, UsersDeps{}, InboxDeps{}, AnnouncementsDeps{}, MeDeps{}, UnsubscribeDeps{}, TopicsDeps{}} {
		deps[reflect.TypeOf(d).Name()] = reflect.TypeOf(d)
	}
	want := map[string]string{}
	for _, f := range (Deps{}).features() {
		name := reflect.TypeOf(f).Elem().Name()
		d, ok := deps[strings.TrimSuffix(name, "Handler")+"Deps"]
		if !ok {
			t.Fatalf("no Deps type listed here for %s", name)
		}
		var fields []string
		for i := range d.NumField() {
			fields = append(fields, d.Field(i).Name)
		}
		want[name] = strings.Join(slices.Sorted(maps.Keys(f.routes())), ", ") + " | " + strings.Join(slices.Sorted(slices.Values(fields)), ", ")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The rows name their handler: | `InboxHandler` | routes | Deps fields |.
	spans := regexp.MustCompile("`([^`]+)`")
	got := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) != 3 || !strings.HasSuffix(cells[0], "Handler`") {
			continue
		}
		var routes, fields []string
		for _, m := range spans.FindAllStringSubmatch(cells[1], -1) {
			routes = append(routes, m[1])
		}
		for _, m := range spans.FindAllStringSubmatch(cells[2], -1) {
			fields = append(fields, m[1])
		}
		slices.Sort(routes)
		slices.Sort(fields)
		got[strings.Trim(cells[0], "`")] = strings.Join(routes, ", ") + " | " + strings.Join(fields, ", ")
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("docs/architecture.md, The API's rooms, row %s:\n got %s\nwant %s", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/architecture.md names a handler %s the router does not compose", name)
		}
	}
}

// sourceTypes is what a package's source declares: each struct type's
// fields and each type's methods.
type sourceTypes struct {
	fields  map[string][]sourceField
	methods map[string]map[string]*ast.FuncDecl
}

type sourceField struct {
	name     string
	typ      string // the named type of this package it holds ("" for any other)
	embedded bool
}

// parsePackage reads the Go files of the package in dir (go/build's list:
// no tests, build constraints applied).
func parsePackage(t *testing.T, dir string) *sourceTypes {
	t.Helper()
	pkg, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	src := newSourceTypes(files)
	if len(src.methods) < 10 {
		t.Fatalf("found methods on only %d types in %v: the parser misses them", len(src.methods), pkg.GoFiles)
	}
	return src
}

func newSourceTypes(files []*ast.File) *sourceTypes {
	s := &sourceTypes{fields: map[string][]sourceField{}, methods: map[string]map[string]*ast.FuncDecl{}}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					var fields []sourceField
					for _, fl := range st.Fields.List {
						typ := localTypeName(fl.Type)
						if len(fl.Names) == 0 {
							fields = append(fields, sourceField{name: typ, typ: typ, embedded: true})
						}
						for _, n := range fl.Names {
							fields = append(fields, sourceField{name: n.Name, typ: typ})
						}
					}
					s.fields[ts.Name.Name] = fields
				}
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 {
					continue
				}
				recv := localTypeName(d.Recv.List[0].Type)
				if s.methods[recv] == nil {
					s.methods[recv] = map[string]*ast.FuncDecl{}
				}
				s.methods[recv][d.Name.Name] = d
			}
		}
	}
	return s
}

// localTypeName is the name of a type expression T or *T naming a type of
// the package; "" for any other.
func localTypeName(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// handlerTypes are the types with a route table (a routes method), sorted.
func (s *sourceTypes) handlerTypes() []string {
	var out []string
	for typ, ms := range s.methods {
		if _, ok := ms["routes"]; ok {
			out = append(out, typ)
		}
	}
	slices.Sort(out)
	return out
}

// unreached lists typ's fields, and the fields of what it embeds (as
// "embedded.field"), that no path from its entry methods uses, sorted.
func (s *sourceTypes) unreached(typ string, entries ...string) []string {
	r := reach{src: s, used: map[[2]string]bool{}, walked: map[[2]string]bool{}}
	for _, m := range entries {
		r.method(typ, m)
	}
	var out []string
	var check func(typ, prefix string)
	check = func(typ, prefix string) {
		for _, f := range s.fields[typ] {
			if !r.used[[2]string{typ, f.name}] {
				out = append(out, prefix+f.name)
				continue
			}
			if f.embedded {
				check(f.typ, prefix+f.name+".")
			}
		}
	}
	check(typ, "")
	slices.Sort(out)
	return out
}

// reach follows the uses of fields and methods from entry methods.
type reach struct {
	src    *sourceTypes
	used   map[[2]string]bool // (type, field)
	walked map[[2]string]bool // (type, method)
}

// method follows one method of typ: every selector chain on its receiver.
func (r *reach) method(typ, name string) {
	key := [2]string{typ, name}
	fd := r.src.methods[typ][name]
	if fd == nil || r.walked[key] || len(fd.Recv.List[0].Names) == 0 {
		return
	}
	r.walked[key] = true
	recv := fd.Recv.List[0].Names[0].Name
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		var path []string
		var x ast.Expr = sel
		for {
			s, ok := x.(*ast.SelectorExpr)
			if !ok {
				break
			}
			path = append([]string{s.Sel.Name}, path...)
			x = s.X
		}
		if id, ok := x.(*ast.Ident); ok && id.Name == recv {
			r.selector(typ, path)
			return false
		}
		return true
	})
}

// selector marks what path (x.a.b…) reaches on a value of type typ.
func (r *reach) selector(typ string, path []string) {
	name := path[0]
	if _, ok := r.src.methods[typ][name]; ok {
		r.method(typ, name)
		return
	}
	for _, f := range r.src.fields[typ] {
		if f.name == name {
			r.used[[2]string{typ, name}] = true
			if len(path) > 1 && f.typ != "" {
				r.selector(f.typ, path[1:])
			}
			return
		}
	}
	for _, f := range r.src.fields[typ] {
		if f.embedded && r.src.has(f.typ, name) {
			r.used[[2]string{typ, f.name}] = true
			r.selector(f.typ, path)
			return
		}
	}
}

// has reports whether typ has a field or method name, its own or promoted.
func (s *sourceTypes) has(typ, name string) bool {
	if _, ok := s.methods[typ][name]; ok {
		return true
	}
	for _, f := range s.fields[typ] {
		if f.name == name || (f.embedded && s.has(f.typ, name)) {
			return true
		}
	}
	return false
}
