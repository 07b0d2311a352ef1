package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

// BenchmarkSend measures the client's own cost per Send against a local
// server that answers at once: encoding, signing (SigV4 vs the dev caller
// header) and decoding.
func BenchmarkSend(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, acceptedJSON)
	}))
	defer srv.Close()
	n := Notification{Type: "invoice.payment_failed", Recipient: Recipient{UserID: "u1", Email: "u1@example.com"},
		Data: map[string]string{"invoiceUrl": "https://example.com/i/9"}}
	for _, bc := range []struct {
		name string
		opt  Option
	}{
		{"sigv4", WithCredentials(credentials.NewStaticCredentialsProvider("AKID", "SECRET", "TOKEN"))},
		{"dev-caller", WithDevCaller("bench")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := New(srv.URL, bc.opt, WithRegion("eu-west-1"))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Send(ctx, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
