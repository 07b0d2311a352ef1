// Package connections is the client of API Gateway's WebSocket management
// API (@connections: PostToConnection, DeleteConnection), signed with
// SigV4 by the AWS SDK's signer with the function's credentials.
//
// The SDK's own client (service/apigatewaymanagementapi) is not served by
// the module proxy this project builds from (docs/decisions.md, "The live
// inbox's management client"); this client makes the same two calls, with
// the same paths, signing and error (410 GoneException → live.ErrGone).
package connections

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/heraldhq/herald/internal/live"
)

// Client calls one WebSocket API stage's management endpoint,
// https://{api-id}.execute-api.{region}.amazonaws.com/{stage}.
type Client struct {
	endpoint string
	cfg      aws.Config
	signer   *v4.Signer
	http     aws.HTTPClient
}

// New makes a client of endpoint with cfg's credentials, region and HTTP
// client (cfg.HTTPClient, else one with a 5 s timeout).
func New(cfg aws.Config, endpoint string) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("live endpoint %q: want https://{api-id}.execute-api.{region}.amazonaws.com/{stage}", endpoint)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	return &Client{endpoint: strings.TrimSuffix(endpoint, "/"), cfg: cfg, signer: v4.NewSigner(), http: hc}, nil
}

// PostToConnection sends data to the connection.
func (c *Client) PostToConnection(ctx context.Context, id string, data []byte) error {
	return c.do(ctx, http.MethodPost, id, data)
}

// DeleteConnection closes the connection.
func (c *Client) DeleteConnection(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, id, nil)
}

// StatusError is a refused management call.
type StatusError struct {
	Method string
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s @connections: status %d", e.Method, e.Status)
}

func (c *Client) do(ctx context.Context, method, id string, body []byte) error {
	if len(body) > live.MaxMessageBytes {
		return fmt.Errorf("post to connection: %d bytes, over the %d of one frame", len(body), live.MaxMessageBytes)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint+"/@connections/"+url.PathEscape(id), bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	sum := sha256.Sum256(body)
	creds, err := c.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", c.cfg.Region, time.Now()); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s @connections: %w", method, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode == http.StatusGone:
		return live.ErrGone
	case resp.StatusCode/100 != 2:
		return &StatusError{Method: method, Status: resp.StatusCode}
	}
	return nil
}
