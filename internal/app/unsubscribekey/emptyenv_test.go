package unsubscribekey

import (
	"context"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/app/apptest"
)

// UNSUBSCRIBE_SECRET is declared empty in the template (sam local's hook); in
// AWS it stays empty and must mean "read the secret".
func TestEmptySecretReadsSecretsManager(t *testing.T) {
	cfg, rec := apptest.RecordingAWS()
	d := deps(map[string]string{"UNSUBSCRIBE_SECRET": "", "UNSUBSCRIBE_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:1:secret:x"})
	d.AWS = cfg
	l, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.get(context.Background()); err == nil || !strings.Contains(rec.Called(), "secretsmanager.GetSecretValue") {
		t.Errorf("want a GetSecretValue call (and its error), got calls %q, err %v", rec.Called(), err)
	}
}
