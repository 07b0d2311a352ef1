package devstack

import (
	"context"
	"os"
	"reflect"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/intrinsics"
)

// TestDecodeTemplateIsGoformations: the committed template, as written and
// as the SAM transform makes it, decodes to the same typed template as
// goformation's own parse (every resource's struct and values, parameters,
// outputs, globals), and a resource of a type goformation does not know is
// refused, as goformation refuses it.
func TestDecodeTemplateIsGoformations(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	written, err := ParseTemplate(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	transformed, err := LoadTransformed(context.Background(), "../..", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string][]byte{"template.yaml": written.Resolved, "transformed": transformed.Resolved} {
		want, err := goformation.ParseJSONWithOptions(doc, &intrinsics.ProcessorOptions{NoProcess: true})
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeTemplate(doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Resources) < 100 || len(got.Resources) != len(want.Resources) {
			t.Fatalf("%s: %d resources, goformation %d", name, len(got.Resources), len(want.Resources))
		}
		for id, r := range want.Resources {
			if !reflect.DeepEqual(got.Resources[id], r) {
				t.Errorf("%s: %s decoded as %#v, goformation %#v", name, id, got.Resources[id], r)
			}
		}
		got.Resources, want.Resources = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: template decoded as %#v, goformation %#v", name, got, want)
		}
	}
	unknown := []byte(`{"Resources":{"X":{"Type":"AWS::Nothing::Here","Properties":{}}}}`)
	if _, err := goformation.ParseJSONWithOptions(unknown, &intrinsics.ProcessorOptions{NoProcess: true}); err == nil {
		t.Fatal("goformation accepts an unknown type: the refusal below would differ")
	}
	if _, err := decodeTemplate(unknown); err == nil {
		t.Error("an unknown resource type decoded")
	}
}

// BenchmarkParseTemplate is the committed template's parse (YAML conversion
// remembered after the first): the cost every stack start, template test
// and capacity model run pays.
func BenchmarkParseTemplate(b *testing.B) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ParseTemplate(raw, nil); err != nil {
			b.Fatal(err)
		}
	}
}
