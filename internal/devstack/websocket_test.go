package devstack

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/coder/websocket"
)

// The management endpoint answers 410 GoneException for a connection still
// inside its $connect, as API Gateway does (a connection is established
// only once its $connect integration returns: docs.aws.amazon.com,
// apigateway-websocket-api-route-keys-connect-disconnect, and the "410
// GoneException" knowledge-center article); once established, DELETE
// closes it.
func TestWebSocketManageDuringConnect(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	manage := func(method, id string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+"/live/@connections/"+id, nil)
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20261204/us-east-1/execute-api/aws4_request")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("x-amzn-ErrorType")
	}
	direct := func(ctx context.Context, _ time.Duration, fn func(context.Context) error) error { return fn(ctx) }
	nothing := func(context.Context, events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{StatusCode: http.StatusOK}, nil
	}
	during := map[string]int{}
	var connID string
	connect := func(_ context.Context, ev events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error) {
		connID = ev.RequestContext.ConnectionID
		for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			status, typ := manage(m, connID)
			if typ != "GoneException" {
				status = -status
			}
			during[m] = status
		}
		return events.APIGatewayProxyResponse{StatusCode: http.StatusOK}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &wsGateway{apiID: "api", stage: "live", now: time.Now, log: slog.New(slog.NewTextHandler(io.Discard, nil)), running: ctx,
		conns: map[string]*wsConn{}, routes: map[string]wsRoute{
			"$connect": {handler: connect, invoke: direct}, "$disconnect": {handler: nothing, invoke: direct}, "$default": {handler: nothing, invoke: direct},
		}}
	g.mount(mux)
	defer g.closeAll()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/live", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for m, status := range during {
		if status != http.StatusGone {
			t.Errorf("%s during $connect: %d, want 410 GoneException", m, status)
		}
	}
	if len(during) != 3 {
		t.Fatalf("the $connect made %d management calls", len(during))
	}
	if status, _ := manage(http.MethodDelete, connID); status != http.StatusNoContent {
		t.Fatalf("DELETE once established: %d, want 204", status)
	}
	readCtx, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if _, _, err := c.Read(readCtx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after DELETE the client reads %v, want a normal closure", err)
	}
}
