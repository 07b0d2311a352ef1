// Package bench measures the inbox's read paths against DynamoDB Local: the
// unread count and the first page, for a user with 10 items and one with
// 10,000. Both should cost about the same (the count is capped, the page is
// one bounded query); `make bench` reports the figures and docs/benchmarks.md
// records them.
//
// It needs only the table, so it starts the emulators without the functions
// (no stream relay working through the seeded items while we measure), and
// only when benchmarks were asked for: `make test` runs nothing here.
package bench_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/api"
	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/apifn"
	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/inbox"
)

var env struct {
	store   *stacktest.Stores
	handler *api.Handler
}

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" || testing.Short() || os.Getenv("HERALD_SKIP_INTEGRATION") != "" {
		os.Exit(m.Run())
	}
	stop, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "inbox bench:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// start runs the emulators, creates the template's resources and wires the
// API function exactly as the Lambda main does.
func start() (func(), error) {
	root, err := stacktest.RepoRoot()
	if err != nil {
		return nil, err
	}
	tmpl, err := devstack.LoadTemplate(filepath.Join(root, "template.yaml"), nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	emu, err := devstack.StartEmulators(ctx, devstack.EmulatorOptions{InfraDir: filepath.Join(root, "infra", "local")})
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(devstack.LocalRegion),
		config.WithCredentialsProvider(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "bench"}, nil
		})))
	if err != nil {
		emu.Stop()
		return nil, err
	}
	ddbCfg := cfg.Copy()
	ddbCfg.BaseEndpoint = aws.String(emu.DynamoDB)
	sqsCfg := cfg.Copy()
	sqsCfg.BaseEndpoint = aws.String(emu.SQS)
	res, err := devstack.CreateResources(ctx, tmpl, dynamodb.NewFromConfig(ddbCfg), sqs.NewFromConfig(sqsCfg), "bench-")
	if err != nil {
		emu.Stop()
		return nil, err
	}
	getenv := map[string]string{"TABLE_NAME": res.Table, "CAMPAIGN_QUEUE_URL": res.Queues["CampaignQueue"].URL}
	env.handler, err = apifn.New(app.Deps{AWS: ddbCfg, Getenv: func(k string) string { return getenv[k] }, Now: time.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Catalog: catalog.MustLoad()})
	if err != nil {
		emu.Stop()
		return nil, err
	}
	env.store = stacktest.NewStores(dynamo.New(dynamodb.NewFromConfig(ddbCfg), res.Table))
	// A few active announcements, as in production: the badge and the page
	// then also read the user's markers.
	for i := range 3 {
		now := time.Now()
		if _, err := env.store.CreateAnnouncement(ctx, &inbox.Announcement{
			ID: fmt.Sprintf("a%026d", i), Title: "Announcement", Body: "Body", PublishedAt: now.Add(-time.Hour),
			ExpiresAt: now.Add(24 * time.Hour), CreatedAt: now, Caller: "bench",
		}); err != nil {
			emu.Stop()
			return nil, err
		}
	}
	if err := seed(context.Background()); err != nil {
		emu.Stop()
		return nil, err
	}
	return emu.Stop, nil
}

// Sizes compared.
var sizes = []int{10, 10_000}

// users maps a size to the user holding that many unread notifications.
var users = map[int]string{}

// seed gives each size its user (BatchWriteItem, 25 items a request, 8
// requests in flight), then warms DynamoDB Local's JIT with a few hundred
// requests so that the first benchmark is not measured cold.
func seed(ctx context.Context) error {
	for _, n := range sizes {
		user := fmt.Sprintf("bench-%d", n)
		base := time.Now().Add(-time.Hour)
		ns := make([]*domain.Notification, n)
		for i := range n {
			ns[i] = &domain.Notification{
				ID: fmt.Sprintf("n%s-%06d", user, i), Caller: "bench", Type: "comment.created",
				Recipient: domain.Recipient{UserID: user}, Priority: domain.PriorityLow, Status: domain.NotificationAccepted,
				Data:      map[string]any{"actorLabel": "Someone", "url": fmt.Sprintf("https://example.com/threads/%d", i)},
				CreatedAt: base.Add(time.Duration(i) * time.Millisecond),
			}
		}
		started := time.Now()
		if err := env.store.PutNotifications(ctx, ns, 8); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "inbox bench: seeded %d items in %s\n", n, time.Since(started).Round(time.Millisecond))
		users[n] = user
	}
	for range 100 {
		for _, n := range sizes {
			for _, r := range routes {
				if _, err := env.handler.Handle(ctx, userRequest(r.key, users[n], r.query)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

var routes = []struct {
	key   string
	query map[string]string
}{
	{"GET /v1/users/{userId}/inbox/unread-count", nil},
	{"GET /v1/users/{userId}/inbox", map[string]string{"limit": "20"}},
}

func userRequest(routeKey, user string, query map[string]string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RouteKey: routeKey, PathParameters: map[string]string{"userId": user}, QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": user}}}},
	}
}

func handle(b *testing.B, req events.APIGatewayV2HTTPRequest) {
	resp, err := env.handler.Handle(context.Background(), req)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%d %s %v", resp.StatusCode, resp.Body, err)
	}
}

// benchRoute measures a route for each size, then both sizes alternately in
// one loop: on a shared machine, load drifts between sub-benchmarks, while
// alternating requests see the same load, so "ratio" (10,000-item latency ÷
// 10-item latency) is the figure to compare with the goal (≤ 1.5).
func benchRoute(b *testing.B, routeKey string, query map[string]string) {
	if env.handler == nil {
		b.Skip("no emulators")
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			req := userRequest(routeKey, users[n], query)
			for b.Loop() {
				handle(b, req)
			}
		})
	}
	b.Run("alternating", func(b *testing.B) {
		small, large := userRequest(routeKey, users[sizes[0]], query), userRequest(routeKey, users[sizes[1]], query)
		var tSmall, tLarge time.Duration
		n := 0
		for b.Loop() {
			start := time.Now()
			handle(b, small)
			mid := time.Now()
			handle(b, large)
			tSmall, tLarge, n = tSmall+mid.Sub(start), tLarge+time.Since(mid), n+1
		}
		b.ReportMetric(float64(tSmall.Nanoseconds())/float64(n), "ns/req@10")
		b.ReportMetric(float64(tLarge.Nanoseconds())/float64(n), "ns/req@10000")
		b.ReportMetric(float64(tLarge)/float64(tSmall), "ratio")
	})
}

// BenchmarkUnreadCount: GET …/inbox/unread-count (a capped COUNT query on
// the unread index, plus the user's announcement markers).
func BenchmarkUnreadCount(b *testing.B) { benchRoute(b, routes[0].key, routes[0].query) }

// BenchmarkFirstPage: GET …/inbox?limit=20 (one query, markers and locale,
// rendering).
func BenchmarkFirstPage(b *testing.B) { benchRoute(b, routes[1].key, routes[1].query) }
