package pushfn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/apptest"
	"github.com/heraldhq/herald/internal/catalog"
)

// VAPID_PRIVATE_KEY is declared empty in the template (sam local's hook); in
// AWS it stays empty and must mean "read the SSM parameter".
func TestEmptyVAPIDPrivateKeyReadsTheParameter(t *testing.T) {
	cfg, rec := apptest.RecordingAWS()
	env := map[string]string{"VAPID_PRIVATE_KEY": "", "VAPID_PRIVATE_KEY_PARAMETER": "/herald/vapid-private-key",
		"VAPID_PUBLIC_KEY": "B" + strings.Repeat("A", 86), "VAPID_SUBJECT": "mailto:ops@example.com", "TABLE_NAME": "t"}
	d := app.Deps{AWS: cfg, Getenv: func(k string) string { return env[k] }, Now: time.Now, Catalog: &catalog.Catalog{}}
	_, err := New(context.Background(), d)
	if err == nil || !strings.Contains(rec.Called(), "AmazonSSM.GetParameter") {
		t.Errorf("want a GetParameter call (and its error), got calls %q, err %v", rec.Called(), err)
	}
}
