// Package cfnyaml converts a CloudFormation YAML template to JSON with its
// intrinsic functions as written (short-form tags such as !Ref in their long
// form), unresolved: the one entry to goformation's YAML reading.
package cfnyaml

import (
	"sync"

	"github.com/awslabs/goformation/v7/intrinsics"
)

// goformation's ProcessYAML registers its tag resolvers in a package-level
// map on every call and reads that map while it decodes
// (intrinsics/tags.go): two conversions at once are a data race (the race
// detector saw it when the template tests ran in parallel), which can end
// the process with "concurrent map writes". Conversions take turns.
var processYAML sync.Mutex

// ToJSON is the template as JSON, intrinsic functions unresolved.
func ToJSON(raw []byte) ([]byte, error) {
	processYAML.Lock()
	defer processYAML.Unlock()
	return intrinsics.ProcessYAML(raw, &intrinsics.ProcessorOptions{NoProcess: true})
}
