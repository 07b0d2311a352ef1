package devstack

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/awslabs/goformation/v7/cloudformation"
)

// resourceTypes is goformation's registry of resource types, read once.
// goformation's own Resources.UnmarshalJSON calls cloudformation.AllResources
// for every resource it decodes, and that function builds the whole registry
// (a map of some 1,400 freshly allocated structs) each time: for Herald's
// 150-odd resources it was 45 % of parsing a template and more than half of
// a `herald capacity` run (docs/decisions.md, "Decoding the template's
// resources").
var resourceTypes = sync.OnceValue(func() map[string]reflect.Type {
	types := map[string]reflect.Type{}
	for name, r := range cloudformation.AllResources() {
		types[name] = reflect.TypeOf(r).Elem()
	}
	return types
})

// decodeTemplate is goformation.ParseJSONWithOptions(doc, NoProcess) — the
// same typed template, each resource decoded into a fresh struct of its
// type, custom resources as CustomResource — reading the type registry once.
// TestDecodeTemplateIsGoformations holds the two equal.
func decodeTemplate(doc []byte) (*cloudformation.Template, error) {
	var whole struct {
		*cloudformation.Template
		// Shadows the embedded Resources: decoded here, not by goformation.
		Resources map[string]json.RawMessage `json:"Resources"`
	}
	whole.Template = &cloudformation.Template{}
	if err := json.Unmarshal(doc, &whole); err != nil {
		return nil, err
	}
	if whole.Resources == nil {
		return whole.Template, nil
	}
	types := resourceTypes()
	resources := make(cloudformation.Resources, len(whole.Resources))
	for name, raw := range whole.Resources {
		var head struct{ Type string }
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, err
		}
		var r cloudformation.Resource
		switch typ, known := types[head.Type]; {
		case head.Type == "":
			return nil, fmt.Errorf("resource %s has no Type", name)
		case strings.HasPrefix(head.Type, "Custom::"):
			r = &cloudformation.CustomResource{Type: head.Type}
		case known:
			r = reflect.New(typ).Interface().(cloudformation.Resource)
		default:
			return nil, fmt.Errorf("resource %s: type %s is not one goformation knows", name, head.Type)
		}
		if err := json.Unmarshal(raw, r); err != nil {
			return nil, err
		}
		resources[name] = r
	}
	whole.Template.Resources = resources
	return whole.Template, nil
}
