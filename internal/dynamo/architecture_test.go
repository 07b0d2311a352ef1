package dynamo_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// keyConstant names the constants the key builders are made of.
var keyConstant = regexp.MustCompile(`(Prefix|SK|PK|Partition|Infix)$`)

// TestArchitectureNamesEveryKeyPrefix: every key part this package writes
// (its string constants named …Prefix, …SK, …PK, …Partition, …Infix) is
// named in docs/architecture.md's items table, in a code span: a prefix
// (with '#') inside one, a fixed sort or partition key as a whole one.
func TestArchitectureNamesEveryKeyPrefix(t *testing.T) {
	consts := keyConstants(t)
	if len(consts) < 20 {
		t.Fatalf("found only %d key constants (%v): the parser misses them", len(consts), consts)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "\n## The table\n")
	if start < 0 {
		t.Fatal(`docs/architecture.md has no "## The table" section`)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var spans []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue // the tables only
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
			spans = append(spans, m[1])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(consts)) {
		v := consts[name]
		named := slices.ContainsFunc(spans, func(s string) bool {
			if strings.Contains(v, "#") {
				return strings.Contains(s, v)
			}
			return s == v
		})
		if !named {
			t.Errorf("key part %q (%s in internal/dynamo) is not named in docs/architecture.md's items table", v, name)
		}
	}
}

// keyConstants parses the package's non-test files for string constants
// whose name marks them as a part of an item key.
func keyConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) || !keyConstant.MatchString(n.Name) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[n.Name] = v
				}
			}
		}
	}
	return out
}
