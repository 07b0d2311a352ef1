package controlplane

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ReleaseFile, at the repository's root, names the commit whose
// template.yaml is the last released one (deployed): the stack update a new
// template makes is checked against it. A committed file rather than a git
// tag, so that it travels with any clone or submission of the branch.
const ReleaseFile = "RELEASED"

var commitRe = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// ErrNoRelease: the tree has no release marker or no git history to read
// the released template from.
var ErrNoRelease = errors.New("no released template to compare with")

// ReleasedCommit reads the commit named in root/RELEASED: the first line
// that is not blank or a # comment.
func ReleasedCommit(root string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(root, ReleaseFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: %s is missing", ErrNoRelease, ReleaseFile)
	}
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !commitRe.MatchString(line) {
			return "", fmt.Errorf("%s: %q is not a commit id", ReleaseFile, line)
		}
		return line, nil
	}
	return "", fmt.Errorf("%s names no commit", ReleaseFile)
}

// ReleasedTemplate returns template.yaml as of the released commit
// (`git show <commit>:template.yaml` in root). Without git or a .git
// directory (an exported tree) it returns ErrNoRelease; a commit missing
// from the clone (a shallow clone) is an error saying so.
func ReleasedTemplate(root string) ([]byte, string, error) {
	rev, err := ReleasedCommit(root)
	if err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		return nil, rev, fmt.Errorf("%w: %s is not a git checkout", ErrNoRelease, root)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, rev, fmt.Errorf("%w: git is not installed", ErrNoRelease)
	}
	cmd := exec.Command("git", "show", rev+":template.yaml")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, rev, fmt.Errorf("read the released template (%s names %s; a shallow clone needs `git fetch --unshallow`): %v: %s",
			ReleaseFile, rev, err, strings.TrimSpace(stderr.String()))
	}
	return out, rev, nil
}

// GSIs lists each DynamoDB table's global secondary index names in raw
// template YAML (names are literals in Herald's template).
func GSIs(raw []byte) (map[string][]string, error) {
	var d struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				GlobalSecondaryIndexes []struct{ IndexName any }
			}
		}
	}
	if err := decodePlain(raw, &d); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for id, r := range d.Resources {
		if r.Type != "AWS::DynamoDB::Table" {
			continue
		}
		names := []string{}
		for _, g := range r.Properties.GlobalSecondaryIndexes {
			names = append(names, fmt.Sprint(g.IndexName))
		}
		sort.Strings(names)
		out[id] = names
	}
	return out, nil
}

// CheckUpdate applies the rules of a stack update from the released
// template to next: DynamoDB's UpdateTable creates or deletes one global
// secondary index per call, and CloudFormation refuses an update of a table
// that creates or deletes more than one.
func CheckUpdate(released, next []byte) error {
	before, err := GSIs(released)
	if err != nil {
		return fmt.Errorf("released template: %w", err)
	}
	after, err := GSIs(next)
	if err != nil {
		return err
	}
	var v []Violation
	ids := make([]string, 0, len(after))
	for id := range after {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		old, existed := before[id]
		if !existed {
			continue // a new table is created with all its indexes at once
		}
		added, removed := diff(after[id], old), diff(old, after[id])
		if len(added)+len(removed) > 1 {
			v = append(v, Violation{Rule: RuleGSIUpdate, Resource: id, Message: fmt.Sprintf(
				"Cannot perform more than one GSI creation or deletion in a single update (against the released template: creates %v, deletes %v; release one index change at a time)", added, removed)})
		}
	}
	if len(v) > 0 {
		return &Error{Violations: v}
	}
	return nil
}

func diff(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

// RuleStreamReplaced names the release note of a table whose stream view
// type (or stream) changes between the released template and the next.
const RuleStreamReplaced = "dynamodb-stream-view-change-replaces-stream"

// Note is a consequence of a stack update that CloudFormation accepts but
// the operator must plan for (a release note, not a refusal).
type Note struct {
	Rule     string
	Resource string
	Message  string
}

func (n Note) String() string {
	return fmt.Sprintf("%s [%s]: %s", n.Resource, n.Rule, n.Message)
}

// streams reads each DynamoDB table's StreamViewType ("" without a stream)
// and the event source mappings reading each table's stream (EventSourceArn
// a GetAtt of the table's StreamArn) in raw template YAML.
func streams(raw []byte) (views map[string]string, readers map[string][]string, err error) {
	var d struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				StreamSpecification *struct{ StreamViewType any }
				EventSourceArn      any
			}
		}
	}
	if err := decodePlain(raw, &d); err != nil {
		return nil, nil, err
	}
	views, readers = map[string]string{}, map[string][]string{}
	for id, r := range d.Resources {
		switch r.Type {
		case "AWS::DynamoDB::Table":
			views[id] = ""
			if s := r.Properties.StreamSpecification; s != nil {
				views[id] = fmt.Sprint(s.StreamViewType)
			}
		case "AWS::Lambda::EventSourceMapping":
			if table, ok := streamOf(r.Properties.EventSourceArn); ok {
				readers[table] = append(readers[table], id)
			}
		}
	}
	for _, ids := range readers {
		sort.Strings(ids)
	}
	return views, readers, nil
}

// streamOf names the table whose StreamArn a mapping's EventSourceArn gets
// (Fn::GetAtt as a list or a "Table.StreamArn" string).
func streamOf(arn any) (string, bool) {
	m, ok := arn.(map[string]any)
	if !ok {
		return "", false
	}
	switch g := m["Fn::GetAtt"].(type) {
	case []any:
		if len(g) == 2 && fmt.Sprint(g[1]) == "StreamArn" {
			return fmt.Sprint(g[0]), true
		}
	case string:
		if table, attr, ok := strings.Cut(g, "."); ok && attr == "StreamArn" {
			return table, true
		}
	}
	return "", false
}

// UpdateNotes lists the release notes of a stack update from the released
// template to next: changes CloudFormation accepts whose consequences the
// operator must plan for. A table's StreamViewType changed (or its stream
// added or removed) makes DynamoDB create a new stream (a new StreamArn; the
// old stream is kept 24 hours, then deleted), so CloudFormation replaces the
// event source mappings that read it (EventSourceArn requires replacement):
// the new ones start on the new stream, and the records of the old stream
// the old mappings had not read when they were deleted, and the writes made
// while the stream was switched, are never relayed.
func UpdateNotes(released, next []byte) ([]Note, error) {
	before, _, err := streams(released)
	if err != nil {
		return nil, fmt.Errorf("released template: %w", err)
	}
	after, readers, err := streams(next)
	if err != nil {
		return nil, err
	}
	var notes []Note
	ids := make([]string, 0, len(after))
	for id := range after {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		old, existed := before[id]
		if !existed || old == after[id] {
			continue
		}
		view := func(v string) string {
			if v == "" {
				return "no stream"
			}
			return v
		}
		notes = append(notes, Note{Rule: RuleStreamReplaced, Resource: id, Message: fmt.Sprintf(
			"StreamViewType %s -> %s: DynamoDB creates a new stream (new StreamArn; the old one is kept 24 h) and CloudFormation replaces the mappings reading it (%s), which start on the new stream; records of the old stream not yet read, and writes made during the switch, are never relayed. Deploy with intake paused and the relay's IteratorAge at 0, then check for unrelayed notifications (README, \"Upgrade notes\"; docs/runbook.md, \"Changing the table's stream\")",
			view(old), view(after[id]), strings.Join(readers[id], ", "))})
	}
	off, err := offByDefaultNotes(released, next)
	return append(notes, off...), err
}
