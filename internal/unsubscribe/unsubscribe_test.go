package unsubscribe

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func TestTokenRoundTrip(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := NewSigner(secret, time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	tok := s.Token("user-1", "reservation.approved")
	c, err := s.Verify(tok)
	if err != nil || c.UserID != "user-1" || c.Type != "reservation.approved" || !c.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("Verify = %+v, %v", c, err)
	}
	u, err := url.Parse(s.URL("https://api.example.com/v1/unsubscribe", "user-1", "reservation.approved"))
	if err != nil || u.Query().Get("token") != tok {
		t.Fatalf("URL carries token %q, want %q (%v)", u.Query().Get("token"), tok, err)
	}
}

func TestVerifyRejects(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := now
	s, _ := NewSigner(secret, time.Hour, func() time.Time { return clock })
	good := s.Token("u1", "comment.created")
	other, _ := NewSigner([]byte(strings.Repeat("x", 32)), time.Hour, func() time.Time { return now })
	body, sig, _ := strings.Cut(good, ".")
	forged := b64.EncodeToString([]byte(`{"v":1,"u":"u2","t":"comment.created","e":9999999999}`)) + "." + sig

	tests := []struct {
		name  string
		token string
		at    time.Time
		want  error
	}{
		{"empty", "", now, ErrInvalid},
		{"no signature", body, now, ErrInvalid},
		{"no body", "." + sig, now, ErrInvalid},
		{"other key", other.Token("u1", "comment.created"), now, ErrInvalid},
		{"body swapped", forged, now, ErrInvalid},
		{"signature not base64", body + ".***", now, ErrInvalid},
		{"truncated signature", good[:len(good)-2], now, ErrInvalid},
		{"signature's last character another encoding of the same bytes", noncanonical(t, good), now, ErrInvalid},
		{"expired", good, now.Add(time.Hour), ErrExpired},
		{"valid just before expiry", good, now.Add(time.Hour - time.Second), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock = tt.at
			if _, err := s.Verify(tt.token); !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewSignerRejectsShortSecret(t *testing.T) {
	if _, err := NewSigner([]byte("short"), 0, nil); err == nil {
		t.Fatal("accepted a 5-byte secret")
	}
}

// noncanonical respells the token's last base64 character with the same
// data bits and non-zero padding bits: a lenient decoder reads the same
// signature bytes.
func noncanonical(t *testing.T, tok string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, tok[len(tok)-1])
	alt := tok[:len(tok)-1] + string(alphabet[last^1])
	_, sig, _ := strings.Cut(tok, ".")
	_, altSig, _ := strings.Cut(alt, ".")
	a, errA := base64.RawURLEncoding.DecodeString(sig)
	b, errB := base64.RawURLEncoding.DecodeString(altSig)
	if errA != nil || errB != nil || !bytes.Equal(a, b) || alt == tok {
		t.Fatalf("respelling is not the same bytes: %v %v", errA, errB)
	}
	return alt
}
