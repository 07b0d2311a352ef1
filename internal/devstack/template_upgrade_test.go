package devstack

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/heraldhq/herald/internal/devstack/controlplane"
)

// TestTemplateUpgradeSteps: the deploys README's "Upgrading" lists from the
// released template to template.yaml, built as an operator builds them
// (controlplane.KeepIndex, `go run ./scripts/controlplane
// -keep-released-index`): while the release has the former inbox listing
// (gsi1) and template.yaml does not, the first deploy keeps it (the code
// moves, no index changes) and the second drops it. Each step passes AWS's
// control-plane rules, its update from the step before (one GSI created or
// deleted at most) and cfn-lint when installed.
func TestTemplateUpgradeSteps(t *testing.T) {
	released, rev, err := controlplane.ReleasedTemplate("../..")
	if err != nil {
		t.Fatal(err)
	}
	final, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gsis := func(raw []byte) []string {
		t.Helper()
		g, err := controlplane.GSIs(raw)
		if err != nil {
			t.Fatal(err)
		}
		return g["Table"]
	}
	steps := [][]byte{}
	if slices.Contains(gsis(released), "gsi1") && !slices.Contains(gsis(final), "gsi1") {
		keep, err := controlplane.KeepIndex(final, released, "gsi1")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := gsis(keep), gsis(released); !slices.Equal(got, want) {
			t.Errorf("step 1 indexes %v, want the release's %v (the code moves first)", got, want)
		}
		steps = append(steps, keep)
	} else {
		t.Logf("no index to keep from the release %s: one step", rev)
	}
	steps = append(steps, final)
	lint, _ := filepath.Abs("../../.cache/python/bin/cfn-lint")
	if _, err := os.Stat(lint); err != nil {
		lint, _ = exec.LookPath("cfn-lint")
	}
	prev := released
	for i, step := range steps {
		if _, err := ParseTemplate(step, nil); err != nil {
			t.Errorf("step %d: %v", i+1, err)
		}
		if err := controlplane.CheckUpdate(prev, step); err != nil {
			t.Errorf("step %d from the one before: %v", i+1, err)
		}
		if lint != "" && i < len(steps)-1 { // the last is template.yaml: TestCfnLint
			path := filepath.Join("../..", ".cache", "upgrade-step.yaml")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, step, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(lint, "--", path)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Errorf("step %d: cfn-lint: %v\n%s", i+1, err, out.String())
			}
		}
		prev = step
	}
	// A step that dropped gsi1 and added another index at once is refused.
	two, err := controlplane.KeepIndex(final, released, "gsi1")
	if err == nil {
		two = bytes.Replace(two, []byte("- IndexName: gsi1\n"), []byte("- IndexName: gsi9\n"), 1)
		if err := controlplane.CheckUpdate(released, two); err == nil {
			t.Error("a step creating and deleting an index was accepted")
		}
	}
}
