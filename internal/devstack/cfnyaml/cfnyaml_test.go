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

// TestToJSONRemembersOnlyWhatItWasGiven: a conversion seen before gives the
// same JSON as the first time, as the caller's own copy (changing it changes
// no later answer), and a template that differs by one byte is converted
// anew, not answered from a near neighbour.
func TestToJSONRemembersOnlyWhatItWasGiven(t *testing.T) {
	a := []byte("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !Ref A\n")
	b := []byte(strings.Replace(string(a), "!Ref A", "!Ref B", 1))
	first, err := ToJSON(a)
	if err != nil {
		t.Fatal(err)
	}
	want := string(first)
	clear(first) // the caller's copy
	again, err := ToJSON(a)
	if err != nil || string(again) != want {
		t.Fatalf("second conversion = %s, %v; want %s", again, err, want)
	}
	other, err := ToJSON(b)
	if err != nil || !strings.Contains(string(other), `"Ref": "B"`) {
		t.Fatalf("one byte changed = %s, %v; want Ref B", other, err)
	}
	for i := range keep + 1 { // push a out of the remembered few
		if _, err := ToJSON([]byte(string(a) + strings.Repeat(" ", i+1) + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ToJSON(a); err != nil || string(got) != want {
		t.Fatalf("after eviction = %s, %v; want %s", got, err, want)
	}
}
