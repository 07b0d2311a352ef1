package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"regexp"
	"strings"

	"github.com/heraldhq/herald/internal/inbox"
)

// Ids Herald issues: notification, announcement and push subscription ids
// share one alphabet and length; ids derived from a dedupe key make the
// table's conditional put the deduplication.

// idAlphabet is the lower-case, unambiguous base32 of every id Herald issues.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

var idEncoding = base32.NewEncoding(idAlphabet).WithPadding(base32.NoPadding)

// makeID is prefix + the base32 of b's first 16 bytes (26 characters).
func makeID(prefix string, b []byte) string { return prefix + idEncoding.EncodeToString(b[:16]) }

// NewRandomID returns a random notification id shaped like dedupe ids.
func NewRandomID(random []byte) string { return makeID("n", random) }

// dedupeID derives the notification id from the caller-scoped dedupe key, so
// that the table's conditional put on the id is the deduplication: one write,
// no lock, no read-then-write.
func dedupeID(caller, dedupeKey string) string {
	buf := make([]byte, 0, 512)
	buf = append(buf, caller...)
	buf = append(buf, 0)
	buf = append(buf, dedupeKey...)
	sum := sha256.Sum256(buf)
	return makeID("n", sum[:])
}

// validNotificationID reports whether id has the shape of the ids Herald
// issues ("n" + 26 base32 characters); anything else cannot exist.
func validNotificationID(id string) bool {
	if len(id) != 27 || id[0] != 'n' {
		return false
	}
	for i := 1; i < len(id); i++ {
		if strings.IndexByte(idAlphabet, id[i]) < 0 {
			return false
		}
	}
	return true
}

// announcementIDFor derives the id from the caller-scoped idempotency key, so
// that the conditional put on the id deduplicates (as for notifications).
func announcementIDFor(caller, key string) string {
	sum := sha256.Sum256([]byte("announcement\x00" + caller + "\x00" + key))
	return makeID(inbox.AnnouncementIDPrefix, sum[:])
}

func newAnnouncementID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return makeID(inbox.AnnouncementIDPrefix, b[:])
}

// subscriptionID is "s" + 26 base32 characters of the endpoint's hash.
func subscriptionID(endpoint string) string {
	sum := sha256.Sum256([]byte(endpoint))
	return makeID("s", sum[:])
}

// subscriptionIDShape admits the ids Herald issues and any other simple id a
// store may hold.
var subscriptionIDShape = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func validSubscriptionID(id string) bool { return subscriptionIDShape.MatchString(id) }
