package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/controlplane"
)

// A release note concerns a deploy against the released template, not a
// local run: make aws-lint (so make aws-check) prints each note of the
// update from RELEASED, herald dev's check of that update
// (devstack.CheckRelease) logs none. Here for a template whose table's
// stream view differs from the release's.
func TestReleaseNotesInAWSCheckNotInDev(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	released, _, err := controlplane.ReleasedTemplate("../..")
	if err != nil {
		t.Fatalf("released template: %v", err)
	}
	view := regexp.MustCompile(`(?m)^(        StreamViewType: )(\S+)\n`)
	m := view.FindSubmatch(released)
	if m == nil {
		t.Fatal("the released template's table has no StreamViewType")
	}
	other := "NEW_AND_OLD_IMAGES"
	if string(m[2]) == other {
		other = "NEW_IMAGE"
	}
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, view.ReplaceAll(raw, []byte("${1}"+other+"\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(&out, "../..", path, controlplane.DefaultAccountConcurrency, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "controlplane: release note (update from ") || !strings.Contains(out.String(), controlplane.RuleStreamReplaced) {
		t.Errorf("make aws-lint printed no release note:\n%s", out.String())
	}
	var logs bytes.Buffer
	if err := devstack.CheckRelease("../..", path, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "release note") || strings.Contains(logs.String(), controlplane.RuleStreamReplaced) {
		t.Errorf("herald dev's check logged a release note:\n%s", logs.String())
	}
}
