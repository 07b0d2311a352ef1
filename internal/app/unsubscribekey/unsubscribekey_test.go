package unsubscribekey

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/app"
)

func deps(env map[string]string) app.Deps {
	return app.Deps{Getenv: func(k string) string { return env[k] }, Now: time.Now}
}

func TestSignerFromConfiguration(t *testing.T) {
	if _, err := New(deps(nil)); err == nil || !strings.Contains(err.Error(), "UNSUBSCRIBE_SECRET_ARN") {
		t.Fatalf("no secret configured: err = %v", err)
	}
	signer, err := New(deps(map[string]string{"UNSUBSCRIBE_SECRET": strings.Repeat("s", 40)}))
	if err != nil {
		t.Fatal(err)
	}
	links := Links{Signer: signer, Base: "https://api.example.com/v1/unsubscribe"}
	raw, err := links.URL(context.Background(), "u1", "reservation.approved")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	c, err := signer.Verify(context.Background(), u.Query().Get("token"))
	if err != nil || c.UserID != "u1" || c.Type != "reservation.approved" || !strings.HasPrefix(raw, "https://api.example.com/v1/unsubscribe?token=") {
		t.Fatalf("link %s verifies as %+v, %v", raw, c, err)
	}
	short, _ := New(deps(map[string]string{"UNSUBSCRIBE_SECRET": "short"}))
	if _, err := short.Verify(context.Background(), "x.y"); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("short secret: err = %v", err)
	}
	if _, err := Lazy(deps(nil)).Verify(context.Background(), "x.y"); err == nil || !strings.Contains(err.Error(), "UNSUBSCRIBE_SECRET_ARN") {
		t.Fatalf("lazy signer without a secret: err = %v", err)
	}
}
