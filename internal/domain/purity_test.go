package domain_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// keyShape is a string literal shaped like a table key part: an upper-case
// prefix ending in '#' ("N#", "DUE#", "USER#…"), the way internal/dynamo
// builds its keys.
var keyShape = regexp.MustCompile(`^[A-Z][A-Z0-9_]*#`)

// keyName is a constant or variable named like the adapter's key parts
// (internal/dynamo's TestArchitectureNamesEveryKeyPrefix).
var keyName = regexp.MustCompile(`(Prefix|SK|PK|Infix)$`)

// TestDomainHoldsNoStorage: the domain keeps the vocabulary and the rules;
// storage (the AWS SDK, the table adapter, its key shapes) stays in the
// adapter (issue 37). Its non-test files import neither the AWS SDK nor any
// Herald package, and hold no string literal shaped like a key prefix.
func TestDomainHoldsNoStorage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	parsed := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed++
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if storageImport(path) {
				t.Errorf("%s imports %s: the domain holds no storage", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for _, id := range vs.Names {
					if keyName.MatchString(id.Name) {
						t.Errorf("%s: %s is named like a key part: key shapes belong to internal/dynamo", fset.Position(id.Pos()), id.Name)
					}
				}
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil && keyShape.MatchString(v) {
				t.Errorf("%s: %s looks like a table key prefix: key shapes belong to internal/dynamo", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	}
	if parsed < 5 {
		t.Fatalf("parsed only %d files of internal/domain", parsed)
	}
}

// storageImport reports whether the domain may not import path: the AWS
// SDK and Lambda types, and every Herald package (the adapter among them).
func storageImport(path string) bool {
	for _, p := range []string{"github.com/aws/", "github.com/heraldhq/herald/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func TestStorageImportAndKeyShape(t *testing.T) {
	for path, want := range map[string]bool{
		"github.com/heraldhq/herald/internal/dynamo":    true,
		"github.com/aws/aws-sdk-go-v2/service/dynamodb": true,
		"github.com/aws/aws-lambda-go/events":           true,
		"time":                                          false,
		"encoding/json":                                 false,
	} {
		if got := storageImport(path); got != want {
			t.Errorf("storageImport(%q) = %v, want %v", path, got, want)
		}
	}
	for v, want := range map[string]bool{"DUE#": true, "N#": true, "USER#": true, "RL#x": true, "#": false, "c#": false, "high": false} {
		if got := keyShape.MatchString(v); got != want {
			t.Errorf("keyShape(%q) = %v, want %v", v, got, want)
		}
	}
}
