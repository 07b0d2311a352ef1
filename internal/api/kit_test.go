package api_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// kitCatchUpMargin is what the kit's catch-up adds to the API's announcement
// cache: an instance may read the announcements up to this long after one
// was stored and still miss it (the inbox index is eventually consistent).
const kitCatchUpMargin = 2 * time.Second

// TestKitCatchUpOutlastsAnnouncementCache holds <herald-inbox>'s
// CATCH_UP_SECONDS (web/herald-inbox.js) to AnnouncementCacheTTL: the kit's
// one catch-up reload after a live inbox.created whose item the list lacked
// must come after every API instance's copy of the announcements has been
// reread, or it can miss the item again (and it is the only one).
func TestKitCatchUpOutlastsAnnouncementCache(t *testing.T) {
	root, err := stacktest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "web", "herald-inbox.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^export const CATCH_UP_SECONDS = (\d+);$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("web/herald-inbox.js: no `export const CATCH_UP_SECONDS = <seconds>;`")
	}
	s, _ := strconv.Atoi(string(m[1]))
	if got, want := time.Duration(s)*time.Second, api.AnnouncementCacheTTL+kitCatchUpMargin; got != want {
		t.Errorf("herald-inbox.js CATCH_UP_SECONDS = %s, want AnnouncementCacheTTL (%s) + %s = %s: update the kit's constant and its comment",
			got, api.AnnouncementCacheTTL, kitCatchUpMargin, want)
	}
}
