package controlplane

import "fmt"

// RuleProtectedCreateRollback: CloudFormation's rollback of a failed create
// deletes what it created, which deletion protection refuses.
const RuleProtectedCreateRollback = "deletion-protection-blocks-create-rollback"

// deletionProtection says, per resource type, whether a resource's
// properties turn its service's deletion protection on: the service then
// refuses the delete CloudFormation makes.
var deletionProtection = map[string]func(p map[string]any) bool{
	// DynamoDB DeleteTable: ResourceInUseException.
	"AWS::DynamoDB::Table": func(p map[string]any) bool { return boolean(p["DeletionProtectionEnabled"]) },
	"AWS::RDS::DBInstance": func(p map[string]any) bool { return boolean(p["DeletionProtection"]) },
	"AWS::RDS::DBCluster":  func(p map[string]any) bool { return boolean(p["DeletionProtection"]) },
	"AWS::Logs::LogGroup":  func(p map[string]any) bool { return boolean(p["DeletionProtectionEnabled"]) },
	"AWS::Cognito::UserPool": func(p map[string]any) bool {
		return fmt.Sprint(p["DeletionProtection"]) == "ACTIVE"
	},
}

// createRollback: when a stack's create fails, CloudFormation deletes every
// resource it created except those whose DeletionPolicy is Retain
// (RetainExceptOnCreate, Snapshot and the default Delete all delete). A
// resource with deletion protection on cannot be deleted, so the rollback
// fails and the stack is left ROLLBACK_FAILED with the resource behind.
// Deletion protection is for a resource that exists: turn it on by an update
// after the first create (docs/decisions.md, "A failed first create leaves
// nothing behind").
func (c *checker) createRollback() {
	for _, typ := range []string{"AWS::DynamoDB::Table", "AWS::RDS::DBInstance", "AWS::RDS::DBCluster", "AWS::Logs::LogGroup", "AWS::Cognito::UserPool"} {
		for _, id := range c.ids(typ) {
			r := c.d.Resources[id]
			if r.DeletionPolicy == "Retain" || !deletionProtection[typ](r.Properties) {
				continue
			}
			policy := r.DeletionPolicy
			if policy == "" {
				policy = "Delete (the default)"
			}
			c.add(id, RuleProtectedCreateRollback,
				"ROLLBACK_FAILED: a failed create deletes %s (DeletionPolicy %s), and the service refuses: \"Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.\" Create it unprotected and turn deletion protection on by an update.",
				id, policy)
		}
	}
}
