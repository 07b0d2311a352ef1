package intake

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// readmeLocalBlocks returns the shell blocks of the README's local part (from
// "Two commands" to "Clients": the mobile push example included) that call
// the API through $API.
func readmeLocalBlocks(t *testing.T) []string {
	t.Helper()
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	start, end := strings.Index(readme, "\n## Two commands"), strings.Index(readme, "\n## Clients")
	if start < 0 || end < start {
		t.Fatal("README: sections Two commands … Clients not found")
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```\n").FindAllStringSubmatch(readme[start:end], -1) {
		if strings.Contains(m[1], "$API") || strings.Contains(m[1], "localhost:") {
			blocks = append(blocks, m[1])
		}
	}
	return blocks
}

// The README's local shell blocks name the API once (API=…), use no
// placeholder a shell cannot run (<id>), and no GNU-only date -d.
func TestReadmeShellBlocksArePortable(t *testing.T) {
	blocks := readmeLocalBlocks(t)
	if len(blocks) < 3 {
		t.Fatalf("README: %d local shell blocks using $API, want the notification, inbox and campaign ones", len(blocks))
	}
	apiSet := 0
	for _, b := range blocks {
		for _, line := range strings.Split(b, "\n") {
			code, _, _ := strings.Cut(line, "   #") // trailing comments may name the port
			if strings.HasPrefix(line, "API=") {
				apiSet++
				continue
			}
			if strings.Contains(code, "127.0.0.1") || strings.Contains(code, "localhost") {
				t.Errorf("README line hard-codes the API instead of $API: %s", line)
			}
			if regexp.MustCompile(`<[a-zA-Z_]+>`).MatchString(code) {
				t.Errorf("README line has a placeholder bash cannot run: %s", line)
			}
			if strings.Contains(code, "date -u -d") && !strings.Contains(code, "date -u -v") {
				t.Errorf("README line uses GNU-only date -d (no BSD/macOS form first): %s", line)
			}
		}
	}
	if apiSet != 1 {
		t.Errorf("README sets API= %d times in its local blocks, want once", apiSet)
	}
}

// The README's local shell blocks run as printed against the stack: the
// notification is sent, the inbox item marked read, the announcement
// accepted and the campaign reaches done.
func TestReadmeShellBlocksRun(t *testing.T) {
	st := stacktest.Stack(t)
	for _, tool := range []string{"bash", "curl", "sed", "grep", "date", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	script := strings.Join(readmeLocalBlocks(t), "\n")
	script = regexp.MustCompile(`(?m)^API=.*$`).ReplaceAllString(script, "API="+st.APIURL)
	cmd := exec.Command("bash", "-eu", "-c", script)
	out, err := cmd.CombinedOutput()
	// The mobile example ends arming a fault for the reader's next push.
	stacktest.Do(t, http.MethodPost, "/_dev/faults", map[string]any{"channel": "mobile", "mode": "off"})
	if err != nil {
		t.Fatalf("README blocks: %v\n%s", err, out)
	}
	for _, want := range []string{
		`"email":{"status":"sent"`,   // the notification's email delivery
		`"readAt":"`,                 // the inbox item marked read
		`"title":"Maintenance"`,      // the announcement
		`"status":"done"`,            // the campaign
		`"recipients":2`, `"sent":2`, // counted per recipient
		`"platform":"apns"`, `"platform":"fcm"`, // the mobile push example's publishes
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("README blocks' output lacks %s:\n%s", want, out)
		}
	}
}
