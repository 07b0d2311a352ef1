// Package pushfn wires the push function (SQS → Web Push services with VAPID,
// and SNS mobile push to native devices).
package pushfn

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/workerfn"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/push"
	"github.com/heraldhq/herald/internal/snspush"
	"github.com/heraldhq/herald/internal/webpush"
	"github.com/heraldhq/herald/internal/worker"
)

var (
	_ push.Subscriptions = (*dynamo.Users)(nil)
	_ push.Devices       = (*dynamo.Users)(nil)
)

// New wires the push function. The VAPID private key comes from the
// environment when given (VAPID_PRIVATE_KEY, the local stack's configuration),
// else from the SSM SecureString parameter VAPID_PRIVATE_KEY_PARAMETER.
func New(ctx context.Context, d app.Deps) (*worker.Handler, error) {
	env, err := d.Require("VAPID_PUBLIC_KEY", "VAPID_SUBJECT")
	if err != nil {
		return nil, err
	}
	private := d.Getenv("VAPID_PRIVATE_KEY")
	if private == "" {
		name := d.Getenv("VAPID_PRIVATE_KEY_PARAMETER")
		if name == "" {
			return nil, fmt.Errorf("missing environment: VAPID_PRIVATE_KEY_PARAMETER")
		}
		out, err := ssm.NewFromConfig(d.AWS).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("read VAPID private key parameter %s: %w", name, err)
		}
		private = aws.ToString(out.Parameter.Value)
	}
	keys, err := webpush.ParseVAPIDKeys(env["VAPID_PUBLIC_KEY"], private)
	if err != nil {
		return nil, err
	}
	// The push services a subscription may name, checked before every send
	// (empty: webpush.DefaultPushServices).
	pushHosts, err := webpush.ParseHostList(d.Getenv("PUSH_ENDPOINT_ALLOW_LIST"))
	if err != nil {
		return nil, err
	}
	sender, err := webpush.NewSender(webpush.SenderConfig{
		Keys: keys, Contact: env["VAPID_SUBJECT"], Now: d.Now, Hosts: pushHosts,
		AllowInsecureLoopback: d.Getenv("PUSH_ALLOW_INSECURE_LOOPBACK") == "true",
	})
	if err != nil {
		return nil, err
	}
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	// Native devices: SNS Publish to their platform endpoints.
	mobile := snspush.New(sns.NewFromConfig(d.AWS, func(o *sns.Options) { o.Retryer = snspush.Retryer() }), nil)
	return workerfn.New(d, st, push.New(sender, st.Users, d.Now).WithMobile(mobile, st.Users))
}
