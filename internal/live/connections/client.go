// Package connections adapts API Gateway's WebSocket management API
// (@connections: PostToConnection, DeleteConnection) to the live inbox's
// Sender and Closer, through the AWS SDK's apigatewaymanagementapi client.
package connections

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi/types"

	"github.com/heraldhq/herald/internal/live"
)

// Client calls one WebSocket API stage's management endpoint,
// https://{api-id}.execute-api.{region}.amazonaws.com/{stage}.
type Client struct {
	api *apigatewaymanagementapi.Client
}

// New makes a client of endpoint (the stage's URL, which is the management
// API's endpoint) with cfg's credentials, region and HTTP client.
func New(cfg aws.Config, endpoint string) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("live endpoint %q: want https://{api-id}.execute-api.{region}.amazonaws.com/{stage}", endpoint)
	}
	api := apigatewaymanagementapi.NewFromConfig(cfg, func(o *apigatewaymanagementapi.Options) {
		o.BaseEndpoint = aws.String(strings.TrimSuffix(endpoint, "/"))
	})
	return &Client{api: api}, nil
}

// PostToConnection sends data to the connection; live.ErrGone when API
// Gateway no longer has it.
func (c *Client) PostToConnection(ctx context.Context, id string, data []byte) error {
	if len(data) > live.MaxMessageBytes {
		return fmt.Errorf("post to connection: %d bytes, over the %d of one frame", len(data), live.MaxMessageBytes)
	}
	_, err := c.api.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String(id), Data: data})
	return gone(err)
}

// DeleteConnection closes the connection.
func (c *Client) DeleteConnection(ctx context.Context, id string) error {
	_, err := c.api.DeleteConnection(ctx, &apigatewaymanagementapi.DeleteConnectionInput{ConnectionId: aws.String(id)})
	return gone(err)
}

func gone(err error) error {
	if _, ok := errors.AsType[*types.GoneException](err); ok {
		return live.ErrGone
	}
	if err != nil {
		return fmt.Errorf("@connections: %w", err)
	}
	return nil
}
