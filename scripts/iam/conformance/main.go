// Command conformance is the IAM half of `make aws-check`: it transforms
// template.yaml with the SAM translator, re-evaluates every AWS call the e2e
// runs recorded (HERALD_IAM_SEEN) against each function's role, checks the
// calls Lambda itself makes with the roles, and lists the grants nothing
// exercised. It exits 1 on any denial or unexplained grant.
//
//	go run ./scripts/iam/conformance -seen .cache/iam/seen [-remove Function:action …] [-cover "pkg …"]
//
// -remove checks against a copy of the template without that permission
// (how to see the check fail). -cover names the e2e packages `make
// aws-check` records from; with the records of every package (`make test`)
// it fails on a call that only a package left out of them makes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/devstack/iam"
)

type removals [][2]string

func (r *removals) String() string { return fmt.Sprint(*r) }
func (r *removals) Set(v string) error {
	fn, action, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("want Function:service:Action, e.g. RelayFunction:dynamodb:BatchGetItem")
	}
	*r = append(*r, [2]string{fn, action})
	return nil
}

func main() {
	seen := flag.String("seen", ".cache/iam/seen", "directory of the e2e runs' call records")
	root := flag.String("root", ".", "repository root")
	justified := flag.String("justified", "scripts/iam/unexercised.txt", "grants kept though no local run exercises them")
	var remove removals
	flag.Var(&remove, "remove", "Function:service:Action to remove from a copy of the template first (repeatable)")
	cover := flag.String("cover", "", "space-separated e2e packages (internal/e2e/…) that must make every call the records hold")
	verbose := flag.Bool("v", false, "print the whole report (per-function counts, kept grants and their reasons) even when it passes")
	flag.Parse()
	if err := run(*root, *seen, *justified, remove, strings.Fields(*cover), *verbose || len(remove) > 0); err != nil {
		fmt.Fprintln(os.Stderr, "iam conformance:", err)
		os.Exit(1)
	}
}

func run(root, seen, justifiedPath string, remove removals, cover []string, verbose bool) error {
	tmpl := filepath.Join(root, "template.yaml")
	if len(remove) > 0 {
		raw, err := os.ReadFile(tmpl)
		if err != nil {
			return err
		}
		for _, r := range remove {
			if raw, err = iam.RemoveAction(raw, r[0], r[1]); err != nil {
				return err
			}
			fmt.Printf("checking a copy of template.yaml without %s's %s\n", r[0], r[1])
		}
		dir, err := os.MkdirTemp("", "herald-iam-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		tmpl = filepath.Join(dir, "template.yaml")
		if err := os.WriteFile(tmpl, raw, 0o644); err != nil {
			return err
		}
	}
	// With the platform applications the local runs had (the runner's own),
	// and email and SMS failover on as internal/e2e/failover's stack runs
	// them: their grants only add to the roles, so every other run's calls
	// are checked against a role that allows no more than theirs did, plus
	// the second region's send and End User Messaging SMS's.
	p, err := iam.Transform(context.Background(), iam.TransformOptions{Root: root, Template: tmpl,
		Params: devstack.WithLocalPlatformApplications(map[string]string{devstack.EmailSecondaryRegionParam: "eu-west-1", "EmailSecondaryIdentity": "example.com",
			devstack.SMSVoiceIdentityParam: devstack.LocalSMSVoiceIdentity}),
		Stack: iam.Stack{Name: devstack.LocalStackName, Prefix: devstack.LocalResourcePrefix, Region: devstack.LocalRegion, Account: devstack.LocalAccountID}})
	if err != nil {
		return err
	}
	records, err := iam.ReadRecords(seen)
	if err != nil {
		return err
	}
	if len(records) == 0 {
		return fmt.Errorf("no call records in %s: run the e2e tests with HERALD_IAM_SEEN=%s (make aws-check does)", seen, seen)
	}
	var sources []string
	for _, r := range records {
		sources = append(sources, r.Source)
	}
	if verbose {
		fmt.Printf("records: %s\n", strings.Join(sources, ", "))
	}
	justified, err := iam.ReadJustifications(filepath.Join(root, justifiedPath))
	if err != nil {
		return err
	}
	rep := iam.Conformance(p, records, justified)
	rep.WriteBrief(os.Stdout, verbose)
	if !rep.OK() {
		return fmt.Errorf("template.yaml's roles do not match what the functions call (see above)")
	}
	if len(cover) > 0 {
		missed := iam.Uncovered(records, cover, justified)
		for _, f := range missed {
			fmt.Printf("  NOT IN AWS-CHECK %s %s on %s: only %s make it\n", f.Function, f.Action, f.Resource, strings.Join(f.Sources, ", "))
		}
		if len(missed) > 0 {
			return fmt.Errorf("make aws-check records from %s, which miss %d calls: record from a package above too (IAM_E2E_SKIP in the Makefile)", strings.Join(cover, " "), len(missed))
		}
		fmt.Printf("make aws-check's packages make every call seen: %s\n", strings.Join(cover, " "))
	}
	fmt.Println("IAM conformance: OK")
	return nil
}
