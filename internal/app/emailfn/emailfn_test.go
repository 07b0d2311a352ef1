package emailfn

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/app"
)

func TestNewRequiresTheUnsubscribeURL(t *testing.T) {
	env := map[string]string{"EMAIL_FROM": "n@example.com", "UNSUBSCRIBE_SECRET": strings.Repeat("s", 40)}
	_, err := New(app.Deps{Getenv: func(k string) string { return env[k] }, Now: time.Now})
	if err == nil || !strings.Contains(err.Error(), "UNSUBSCRIBE_URL") {
		t.Fatalf("err = %v", err)
	}
}
