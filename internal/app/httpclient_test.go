package app

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// sdkBody behaves as smithy-go's request body: readable until closed, its
// WriteTo (net/http's last drain of a body it streamed) answering io.EOF
// once closed. Here WriteTo also waits for the close, which makes the race
// the SDK loses on loopback happen every time: the caller closes the body
// as soon as Do returns, as the SDK does.
type sdkBody struct {
	r      *bytes.Reader
	mu     sync.Mutex
	closed chan struct{}
	once   sync.Once
}

func (b *sdkBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.closed:
		return 0, io.EOF
	default:
	}
	return b.r.Read(p)
}

func (b *sdkBody) WriteTo(io.Writer) (int64, error) {
	<-b.closed
	return 0, io.EOF
}

func (b *sdkBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// TestHTTPClientKeepsTheConnectionOfABodyClosedBeforeItsLastDrain: an
// answer read after the SDK closed its request body arrives whole through
// NewHTTPClient; through the SDK's default client the connection is closed
// under it ("use of closed network connection"), which is how the local
// pollers lost ReceiveMessage answers.
func TestHTTPClientKeepsTheConnectionOfABodyClosedBeforeItsLastDrain(t *testing.T) {
	answer := strings.Repeat("m", 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Length", "65536")
		_, _ = io.WriteString(w, answer[:1024])
		w.(http.Flusher).Flush()
		time.Sleep(200 * time.Millisecond) // the rest after the client closed its request body
		_, _ = io.WriteString(w, answer[1024:])
	}))
	defer srv.Close()
	call := func(c aws.HTTPClient) error {
		body := &sdkBody{r: bytes.NewReader([]byte(`{"QueueUrl":"q","MaxNumberOfMessages":10}`)), closed: make(chan struct{})}
		req, err := http.NewRequest(http.MethodPost, srv.URL, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(body.r.Len())
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_ = body.Close() // as smithy-go's client does once Do returns
		got, err := io.ReadAll(resp.Body)
		if err == nil && string(got) != answer {
			t.Errorf("answer of %d bytes, want %d", len(got), len(answer))
		}
		return err
	}
	if err := call(NewHTTPClient()); err != nil {
		t.Errorf("through NewHTTPClient: %v", err)
	}
	if err := call(awshttp.NewBuildableClient()); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("through the SDK's default client: %v, want the connection closed under the answer (the race this client avoids)", err)
	}
}
