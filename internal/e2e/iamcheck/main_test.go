// Package iamcheck shows the local IAM check failing a real run: its stack
// runs a copy of template.yaml without the relay's dynamodb:BatchGetItem and
// the email function's ses:SendEmail, and the calls that need them fail as
// AWS would fail them.
package iamcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/iam"
	"github.com/heraldhq/herald/internal/devstack/stacktest"
)

// logs collects the functions' JSON logs (written from many goroutines).
var logs stacktest.LogBuffer

// weakened writes template.yaml without the given "Function action"
// permissions to dir and returns its path.
func weakened(dir string, remove ...[2]string) (string, error) {
	root, err := stacktest.RepoRoot()
	if err != nil {
		return "", err
	}
	raw, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		return "", err
	}
	for _, r := range remove {
		if raw, err = iam.RemoveAction(raw, r[0], r[1]); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, fmt.Sprintf("template-%d.yaml", len(remove)))
	return path, os.WriteFile(path, raw, 0o644)
}

var (
	noSendEmail string // the template without the email function's ses:SendEmail
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-iamcheck-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	both, err := weakened(dir, [2]string{"RelayHighFunction", "dynamodb:BatchGetItem"}, [2]string{"EmailFunction", "ses:SendEmail"})
	if err == nil {
		noSendEmail, err = weakened(dir, [2]string{"EmailFunction", "ses:SendEmail"})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := stacktest.Run(m, devstack.Config{Template: both, Logs: &logs}, stacktest.Options{ExpectIAMDenials: true})
	os.RemoveAll(dir)
	os.Exit(code)
}
