package inbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// Cursor is the position a client resumes a list from: every item strictly
// older than Position, in the list named by Scope (a Filter, or
// ScopeAnnouncements).
//
// Encoded, it is opaque to clients: base64url of a checksum and the payload.
// The checksum makes a corrupted or hand-edited cursor a clean 400 instead of
// a query. It is not a secret: a forged cursor can only move the caller to
// another position in a list it is already allowed to read (the partition is
// chosen by the authenticated user, never by the cursor).
type Cursor struct {
	Scope    string
	Position string
}

// ScopeAnnouncements is the scope of the service's announcement list.
const ScopeAnnouncements = "announcements"

// ErrInvalidCursor: the cursor was not issued by Herald, or not for this list.
var ErrInvalidCursor = errors.New("invalid cursor")

const (
	cursorVersion  = "c1"
	checksumLen    = 8
	maxPositionLen = 300
	maxCursorLen   = 512
)

var cursorEncoding = base64.RawURLEncoding

// Encode returns the cursor's opaque form.
func (c Cursor) Encode() string {
	payload := []byte(cursorVersion + "\x00" + c.Scope + "\x00" + c.Position)
	sum := sha256.Sum256(payload)
	return cursorEncoding.EncodeToString(append(sum[:checksumLen:checksumLen], payload...))
}

// DecodeCursor parses an opaque cursor and checks that it belongs to scope.
func DecodeCursor(s, scope string) (Cursor, error) {
	if s == "" || len(s) > maxCursorLen {
		return Cursor{}, ErrInvalidCursor
	}
	raw, err := cursorEncoding.DecodeString(s)
	if err != nil || len(raw) <= checksumLen {
		return Cursor{}, ErrInvalidCursor
	}
	sum, payload := raw[:checksumLen], raw[checksumLen:]
	want := sha256.Sum256(payload)
	if !bytes.Equal(sum, want[:checksumLen]) {
		return Cursor{}, ErrInvalidCursor
	}
	parts := strings.SplitN(string(payload), "\x00", 3)
	if len(parts) != 3 || parts[0] != cursorVersion || parts[1] != scope || !validPosition(parts[2]) {
		return Cursor{}, ErrInvalidCursor
	}
	return Cursor{Scope: parts[1], Position: parts[2]}, nil
}

// validPosition accepts what a sort key looks like: "<time>#<id>" in
// printable ASCII.
func validPosition(p string) bool {
	if len(p) < 3 || len(p) > maxPositionLen {
		return false
	}
	i := strings.IndexByte(p, '#')
	if i <= 0 || i == len(p)-1 {
		return false
	}
	for j := 0; j < len(p); j++ {
		if p[j] < 0x21 || p[j] > 0x7e {
			return false
		}
	}
	return true
}
