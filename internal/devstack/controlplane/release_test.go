package controlplane

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// RELEASED tells whoever edits it where the release is explained: every
// README section it names ("README, "<heading>"") exists.
func TestReleasedNamesReadmeSections(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	released, err := os.ReadFile(filepath.Join(root, ReleaseFile))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	comments := strings.Join(regexp.MustCompile(`(?m)^#.*$`).FindAllString(string(released), -1), " ")
	comments = strings.ReplaceAll(comments, "# ", "")
	names := regexp.MustCompile(`README,\s+"([^"]+)"`).FindAllStringSubmatch(comments, -1)
	if len(names) == 0 {
		t.Fatalf("%s names no README section; its comment: %s", ReleaseFile, comments)
	}
	for _, n := range names {
		if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(n[1]) + `$`).Match(readme) {
			t.Errorf("%s points to the README section %q, which does not exist", ReleaseFile, n[1])
		}
	}
}
