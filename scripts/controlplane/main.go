// Command controlplane checks template.yaml, as the SAM transform hands it to
// CloudFormation, against the rules AWS's control plane enforces
// (internal/devstack/controlplane), then the stack update from the released
// template (RELEASED) to it, and prints the update's release notes (changes
// CloudFormation accepts that need a plan: README, "Upgrade notes"). make
// aws-lint runs it, so make test and make aws-check do; herald dev checks the
// update but shows no release note.
//
// -account-concurrency N checks against the account's Lambda quota (make
// aws-lint: a new account's 10 with the defaults), -parameter-overrides
// 'K=V …' (sam deploy's form) with those parameters (make aws-lint: the
// production profile of docs/deploy.md, on its 1,000).
//
// With -keep-released-index NAME -out FILE it writes the intermediate
// template of an upgrade instead (template.yaml with the released template's
// index NAME kept: README, "Upgrading") and checks that one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/controlplane"
)

func main() {
	root := flag.String("root", ".", "repository root (template.yaml, RELEASED, .git)")
	template := flag.String("template", "", "template to check (default ROOT/template.yaml)")
	account := flag.Int("account-concurrency", controlplane.DefaultAccountConcurrency, "the account's Lambda concurrent executions quota")
	overrides := flag.String("parameter-overrides", "", "parameter values, as sam deploy takes them: 'Key=Value Key2=\"a value\"'")
	keep := flag.String("keep-released-index", "", "write the upgrade step keeping this index of the released template (with -out)")
	out := flag.String("out", "", "file the upgrade step is written to (-keep-released-index)")
	flag.Parse()
	if *keep != "" {
		if *out == "" {
			fmt.Fprintln(os.Stderr, "controlplane: -keep-released-index needs -out FILE")
			os.Exit(2)
		}
		if err := writeStep(*root, *template, *keep, *out); err != nil {
			fmt.Fprintln(os.Stderr, "controlplane:", err)
			os.Exit(1)
		}
		*template = *out
	}
	params, err := controlplane.ParseParameterOverrides(*overrides)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane: -parameter-overrides:", err)
		os.Exit(2)
	}
	if err := run(os.Stdout, *root, *template, *account, params); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, root, template string, account int, params map[string]string) error {
	if template == "" {
		template = filepath.Join(root, "template.yaml")
	}
	profile := fmt.Sprintf("account quota %d, parameters: defaults", account)
	if len(params) > 0 {
		keys := slices.Sorted(maps.Keys(params))
		profile = fmt.Sprintf("account quota %d, parameters: defaults and %s", account, strings.Join(keys, ", "))
	}
	// The template as CloudFormation receives it (the SAM transform's
	// output, as the local runner plays it); loading it applies the rules
	// with Lambda's default account quota.
	tm, err := devstack.LoadTransformed(context.Background(), root, template, params)
	if err != nil {
		return fmt.Errorf("%s: %w", profile, err)
	}
	if account != controlplane.DefaultAccountConcurrency {
		if err := controlplane.Check(tm.Resolved, controlplane.Options{AccountConcurrency: account}); err != nil {
			return fmt.Errorf("%s: %w", profile, err)
		}
	}
	released, rev, err := controlplane.ReleasedTemplate(root)
	if err != nil {
		if errors.Is(err, controlplane.ErrNoRelease) {
			return fmt.Errorf("%w (make aws-check needs the released template)", err)
		}
		return err
	}
	next, err := os.ReadFile(template)
	if err != nil {
		return err
	}
	if err := controlplane.CheckUpdate(released, next); err != nil {
		return fmt.Errorf("update from the released template (%s): %w", rev, err)
	}
	notes, err := controlplane.UpdateNotes(released, next)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(w, "controlplane: release note (update from %s): %s\n", rev[:12], n)
	}
	fmt.Fprintf(w, "controlplane: %s passes AWS's control-plane rules (%s) and updates from the released template (%s)\n", template, profile, rev[:12])
	return nil
}

// writeStep writes template (default ROOT/template.yaml) with the released
// template's index kept to out.
func writeStep(root, template, index, out string) error {
	if template == "" {
		template = filepath.Join(root, "template.yaml")
	}
	released, _, err := controlplane.ReleasedTemplate(root)
	if err != nil {
		return err
	}
	next, err := os.ReadFile(template)
	if err != nil {
		return err
	}
	step, err := controlplane.KeepIndex(next, released, index)
	if err != nil {
		return err
	}
	return os.WriteFile(out, step, 0o644)
}
