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

// newIAM enforces each function's role, as the SAM transform makes it
// (LoadPolicies), on that function's AWS calls. The policies' ARNs use the
// names CreateResources gives the table and queues, in the local region and
// account, so requests and policies name the same things.
func (s *Stack) newIAM(p *iam.Policies) *iam.Enforcer {
	return iam.NewEnforcer(p, LocalRegion, LocalAccountID, func(c iam.Call, err error) {
		s.log.Error("AWS call denied by the function's IAM policy", "function", c.Function,
			"action", c.Action, "resource", c.Resource, "error", err)
	})
}

// LoadPolicies transforms a template (the stack's, or a variant of it) into
// the functions' policies for this stack's names, region and account, and
// the transformed template (Policies.Template).
func (s *Stack) LoadPolicies(ctx context.Context, template string) (*iam.Policies, error) {
	return transform(ctx, s.cfg.Root, template, s.cfg.Overrides)
}

// transform runs the SAM transform of a template (iam.Transform, cached)
// for the local stack's names, region and account, giving SAM params.
func transform(ctx context.Context, root, template string, params map[string]string) (*iam.Policies, error) {
	p, err := iam.Transform(ctx, iam.TransformOptions{Root: root, Template: template, Params: params,
		Stack: iam.Stack{Name: LocalStackName, Prefix: LocalResourcePrefix, Region: LocalRegion, Account: LocalAccountID}})
	if err != nil {
		return nil, fmt.Errorf("SAM transform of the template: %w", err)
	}
	return p, nil
}
