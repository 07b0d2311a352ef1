package devstack

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// stalledOutcome is what a client that declared a body and stalled saw.
type stalledOutcome struct {
	status  int           // the response's status (0: none)
	closed  time.Duration // when the runner closed the connection
	invoked bool          // whether the function ran
	err     error
}

// stalledRequest sends, to the runner's server around its HTTP API
// gateway, a POST that declares Content-Length: 100 and sends one byte,
// then reads until the runner closes the connection. It starts when the
// test binary starts (init below), so that its 30 seconds pass while the
// package's other tests run; TestStalledBodyIsClosed, parallel, reads the
// outcome.
var stalledRequest = sync.OnceValue(func() <-chan stalledOutcome {
	out := make(chan stalledOutcome, 1)
	go func() { out <- sendStalledRequest() }()
	return out
})

func init() { stalledRequest() }

func sendStalledRequest() (o stalledOutcome) {
	var mu sync.Mutex
	g := &gateway{
		routes: compileRoutes([]Route{{Method: "POST", Path: "/v1/notifications", Auth: "AWS_IAM"}}),
		handler: func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			mu.Lock()
			o.invoked = true
			mu.Unlock()
			return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusAccepted}, nil
		},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now,
		invoke: func(ctx context.Context, _ time.Duration, fn func(context.Context) error) error { return fn(ctx) },
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return stalledOutcome{err: err}
	}
	srv := newHTTPServer(g)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return stalledOutcome{err: err}
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "POST /v1/notifications HTTP/1.1\r\nHost: runner\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		return stalledOutcome{err: err}
	}
	// Past 35 s the test has failed: stop waiting.
	_ = conn.SetReadDeadline(start.Add(40 * time.Second))
	r := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(r, nil); err == nil {
		o.status = resp.StatusCode
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	_, err = io.Copy(io.Discard, r) // until the runner closes it
	o.closed = time.Since(start)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		o.err = err
	}
	mu.Lock()
	defer mu.Unlock()
	return o
}

// A request that declares a body and stalls (Content-Length: 100, one byte
// sent) does not hold its connection: within API Gateway's 30 s the runner
// answers 408 without invoking the function and closes the connection,
// well before 35 s.
func TestStalledBodyIsClosed(t *testing.T) {
	t.Parallel()
	o := <-stalledRequest()
	if o.err != nil {
		t.Fatalf("the connection stayed open 40 s: %v", o.err)
	}
	if o.closed < requestReadTimeout-time.Second || o.closed > 35*time.Second {
		t.Errorf("closed after %s, want at %s (at most 35 s)", o.closed.Round(100*time.Millisecond), requestReadTimeout)
	}
	if o.status != http.StatusRequestTimeout || o.invoked {
		t.Errorf("answered %d (function invoked: %v), want 408 without invoking it", o.status, o.invoked)
	}
}
