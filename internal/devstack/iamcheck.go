package devstack

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/devstack/iam"
)

// LocalStackName is the stack name the local stack plays; its resources are
// named LocalResourcePrefix+LogicalId.
const (
	LocalStackName      = "herald"
	LocalResourcePrefix = "herald-"
)

// newIAM transforms the template with the SAM translator and enforces each
// function's resulting role on that function's AWS calls. The policies'
// ARNs use the names CreateResources gives the table and queues, in the
// local region and account, so requests and policies name the same things.
func (s *Stack) newIAM(ctx context.Context) (*iam.Enforcer, error) {
	p, err := s.LoadPolicies(ctx, s.cfg.Template)
	if err != nil {
		return nil, err
	}
	return iam.NewEnforcer(p, LocalRegion, LocalAccountID, func(c iam.Call, err error) {
		s.log.Error("AWS call denied by the function's IAM policy", "function", c.Function,
			"action", c.Action, "resource", c.Resource, "error", err)
	}), nil
}

// LoadPolicies transforms a template (the stack's, or a variant of it) into
// the functions' policies for this stack's names, region and account.
func (s *Stack) LoadPolicies(ctx context.Context, template string) (*iam.Policies, error) {
	p, err := iam.Transform(ctx, iam.TransformOptions{
		Root: s.cfg.Root, Template: template, Params: s.cfg.Overrides,
		Stack: iam.Stack{Name: LocalStackName, Prefix: LocalResourcePrefix, Region: LocalRegion, Account: LocalAccountID},
	})
	if err != nil {
		return nil, fmt.Errorf("IAM policies from the template: %w", err)
	}
	return p, nil
}
