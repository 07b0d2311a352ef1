package cfnyaml

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// TestToJSONConcurrently: conversions from many goroutines at once each
// give their own template's long form (run with -race: goformation's tag
// registry is shared).
func TestToJSONConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			raw := "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !Sub q-" + strings.Repeat("x", i) + "\n"
			got, err := ToJSON([]byte(raw))
			if err != nil {
				t.Error(err)
				return
			}
			var doc struct {
				Resources map[string]struct {
					Properties struct{ QueueName map[string]string }
				}
			}
			if err := json.Unmarshal(got, &doc); err != nil {
				t.Error(err)
				return
			}
			if sub, want := doc.Resources["Q"].Properties.QueueName["Fn::Sub"], "q-"+strings.Repeat("x", i); sub != want {
				t.Errorf("%s: Fn::Sub %q, want %q", got, sub, want)
			}
		})
	}
	wg.Wait()
}
