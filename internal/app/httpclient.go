package app

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// NewHTTPClient is the HTTP client of every AWS client Herald makes (Lambda
// functions and the local runner alike): the SDK's default client, handed
// each request's body as an in-memory copy.
//
// Why: smithy-go gives net/http the body as a reader net/http does not know
// to be in memory, so net/http streams it to the socket and drains it once
// more before the write is done; the SDK closes that body as soon as Do
// returns. When the answer comes first (a loopback emulator, or a function
// descheduled between the two steps), the closed body's WriteTo answers
// io.EOF, net/http takes it for a failed write and closes the connection
// under the response still being read: the SDK retries the call as a
// connection error, so a ReceiveMessage's first answer is lost (its messages
// hidden for the visibility timeout) and a write whose answer was lost is
// sent again. A bytes.Reader is one net/http knows and owns; the copy is the
// size of the request (Herald's are JSON of a few KB).
func NewHTTPClient() aws.HTTPClient { return bodyCopyingClient{next: awshttp.NewBuildableClient()} }

type bodyCopyingClient struct{ next aws.HTTPClient }

func (c bodyCopyingClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength <= 0 {
		return c.next.Do(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, req.ContentLength))
	if err != nil {
		return nil, fmt.Errorf("copy request body: %w", err)
	}
	copied := req.WithContext(req.Context())
	copied.Body = io.NopCloser(bytes.NewReader(body))
	copied.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return c.next.Do(copied)
}
