package devstack

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBenchOnlyPackagesHaveNoTests: make test does not run the packages the
// Makefile lists in BENCH_ONLY, so none of them may hold a test, an example
// or a fuzz target that make test would then silently skip.
func TestBenchOnlyPackagesHaveNoTests(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^BENCH_ONLY := (.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("no BENCH_ONLY line in the Makefile")
	}
	for _, dir := range strings.Fields(string(m[1])) {
		files, err := filepath.Glob(filepath.Join("../..", dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no test files (%v): drop it from BENCH_ONLY", dir, err)
			continue
		}
		benchmarks := 0
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv != nil {
					continue
				}
				name := fn.Name.Name
				switch {
				case strings.HasPrefix(name, "Benchmark"):
					benchmarks++
				case name != "TestMain" && (strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Example") || strings.HasPrefix(name, "Fuzz")):
					t.Errorf("%s: %s in a BENCH_ONLY package, which make test does not run", f, name)
				}
			}
		}
		if benchmarks == 0 {
			t.Errorf("%s: no benchmark: drop it from BENCH_ONLY", dir)
		}
	}
}
