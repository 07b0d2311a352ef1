package connections

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/heraldhq/herald/internal/live"
)

// The SDK's client calls <stage>/@connections/{id}, signed for execute-api,
// and a 410 GoneException becomes live.ErrGone.
func TestClientCallsTheStagesManagementEndpoint(t *testing.T) {
	type call struct{ method, path, body, authz string }
	var calls []call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls = append(calls, call{r.Method, r.URL.EscapedPath(), string(b), r.Header.Get("Authorization")})
		if strings.HasSuffix(r.URL.Path, "/gone") {
			w.Header().Set("x-amzn-ErrorType", "GoneException")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"message":""}`))
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""), HTTPClient: srv.Client()}
	c, err := New(cfg, srv.URL+"/live/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.PostToConnection(ctx, "abc=", []byte(`{"kind":"inbox.created"}`)); err != nil {
		t.Fatalf("post: %v", err)
	}
	if err := c.PostToConnection(ctx, "gone", []byte(`{}`)); !errors.Is(err, live.ErrGone) {
		t.Fatalf("post to a gone connection: %v, want live.ErrGone", err)
	}
	if err := c.DeleteConnection(ctx, "gone"); !errors.Is(err, live.ErrGone) {
		t.Fatalf("delete of a gone connection: %v, want live.ErrGone", err)
	}
	if err := c.PostToConnection(ctx, "big", make([]byte, live.MaxMessageBytes+1)); err == nil {
		t.Fatal("a message over one frame was sent")
	}
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3: %+v", len(calls), calls)
	}
	first := calls[0]
	if first.method != http.MethodPost || first.path != "/live/@connections/abc%3D" || first.body != `{"kind":"inbox.created"}` {
		t.Errorf("post went as %s %s %q", first.method, first.path, first.body)
	}
	if !strings.HasPrefix(first.authz, "AWS4-HMAC-SHA256 ") || !strings.Contains(first.authz, "/eu-west-1/execute-api/aws4_request") {
		t.Errorf("not signed for execute-api: %q", first.authz)
	}
	if calls[2].method != http.MethodDelete {
		t.Errorf("delete went as %s", calls[2].method)
	}
	if _, err := New(cfg, "not a url"); err == nil {
		t.Error("a bad endpoint was taken")
	}
}
