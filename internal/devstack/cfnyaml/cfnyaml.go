// Package cfnyaml converts a CloudFormation YAML template to JSON with its
// intrinsic functions as written (short-form tags such as !Ref in their long
// form), unresolved: the one entry to goformation's YAML reading.
package cfnyaml

import (
	"bytes"
	"crypto/sha256"
	"sync"

	"github.com/awslabs/goformation/v7/intrinsics"
)

// goformation's ProcessYAML registers its tag resolvers in a package-level
// map on every call and reads that map while it decodes
// (intrinsics/tags.go): two conversions at once are a data race (the race
// detector saw it when the template tests ran in parallel), which can end
// the process with "concurrent map writes". Conversions take turns.
//
// The conversion is a pure function of the bytes and the slowest half of
// parsing a template (about 45 ms, ten times that under -race), and one
// process converts the same template.yaml many times: the runner's and the
// capacity model's loads, and in make test 86 of the 175 conversions of the
// template packages' tests. The last few conversions are kept by the hash of
// their input.
var (
	processYAML sync.Mutex
	converted   = map[[sha256.Size]byte][]byte{}
	order       [][sha256.Size]byte
)

// keep is how many conversions are remembered: the committed template and
// the few variants (a release's template, parameter-default edits) a process
// reads more than once.
const keep = 8

// ToJSON is the template as JSON, intrinsic functions unresolved. The result
// is the caller's own copy.
func ToJSON(raw []byte) ([]byte, error) {
	sum := sha256.Sum256(raw)
	processYAML.Lock()
	defer processYAML.Unlock()
	if plain, ok := converted[sum]; ok {
		return bytes.Clone(plain), nil
	}
	plain, err := intrinsics.ProcessYAML(raw, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		return nil, err
	}
	if len(order) == keep {
		delete(converted, order[0])
		order = order[1:]
	}
	converted[sum], order = plain, append(order, sum)
	return bytes.Clone(plain), nil
}
