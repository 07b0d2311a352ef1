package push

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/devstack/pushsink"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/webpush"
)

// BenchmarkSend is the push provider's cost per message to one subscription:
// payload JSON, RFC 8291 encryption, VAPID signing and one HTTP POST over
// loopback to a server that only answers 201 (the push service's own work is
// not measured).
func BenchmarkSend(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	sink, err := pushsink.New(srv.URL, nil) // only to mint a browser-like subscription
	if err != nil {
		b.Fatal(err)
	}
	id, sub, err := sink.NewSubscription("")
	if err != nil {
		b.Fatal(err)
	}
	keys, _ := webpush.GenerateVAPIDKeys()
	hosts, err := webpush.ParseHostList(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	sender, err := webpush.NewSender(webpush.SenderConfig{Keys: keys, Contact: "ops@example.com", AllowInsecureLoopback: true, Hosts: hosts})
	if err != nil {
		b.Fatal(err)
	}
	p := New(sender, &deletedSubs{}, time.Now)
	m := message([]domain.PushSubscription{{ID: id, Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth}}, domain.PriorityNormal, time.Time{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Send(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}
