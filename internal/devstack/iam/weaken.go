package iam

import (
	"fmt"
	"regexp"
	"strings"
)

var actionLine = regexp.MustCompile(`^(\s*)Action:\s*(?:\[(.*)\]|(\S+))\s*$`)

// RemoveAction returns a copy of a SAM template (YAML text as template.yaml
// writes it) in which function's policy statements no longer grant action:
// the action leaves each "Action: [...]" list of the function, and a
// statement left without actions is removed. It is how tests prove the
// local IAM check fails when the template lacks a permission.
func RemoveAction(template []byte, function, action string) ([]byte, error) {
	lines := strings.Split(string(template), "\n")
	start := -1
	for i, l := range lines {
		if l == "  "+function+":" {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("remove %s: no resource %s at the top of Resources", action, function)
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if l := lines[i]; l != "" && indent(l) <= 2 && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			end = i
			break
		}
	}
	removed := false
	var out []string
	out = append(out, lines[:start]...)
	block := lines[start:end]
	for i := 0; i < len(block); i++ {
		m := actionLine.FindStringSubmatch(block[i])
		if m == nil {
			out = append(out, block[i])
			continue
		}
		items := []string{m[3]}
		if m[3] == "" {
			items = strings.Split(m[2], ",")
		}
		var kept []string
		for _, it := range items {
			if it = strings.TrimSpace(it); it != "" && !strings.EqualFold(it, action) {
				kept = append(kept, it)
			}
		}
		if len(kept) == len(items) {
			out = append(out, block[i])
			continue
		}
		removed = true
		if len(kept) > 0 {
			out = append(out, m[1]+"Action: ["+strings.Join(kept, ", ")+"]")
			continue
		}
		// No action left: drop the whole statement ("- Effect: …" and its
		// more indented lines).
		j := len(out) - 1
		for j >= 0 && !strings.HasPrefix(strings.TrimSpace(out[j]), "- ") {
			j--
		}
		if j < 0 {
			return nil, fmt.Errorf("remove %s from %s: statement start not found", action, function)
		}
		dash := indent(out[j])
		// A statement that is a branch of !If [condition, statement, …]
		// becomes AWS::NoValue: the !If keeps its three arguments.
		inIf := j >= 2 && strings.TrimSpace(out[j-2]) == "- !If" && strings.HasPrefix(strings.TrimSpace(out[j-1]), "- ") &&
			!strings.Contains(out[j-1], ":")
		stmt := out[j]
		out = out[:j]
		if inIf {
			out = append(out, stmt[:dash]+"- !Ref AWS::NoValue")
		}
		for i+1 < len(block) && (block[i+1] == "" || indent(block[i+1]) > dash) {
			i++
		}
	}
	if !removed {
		return nil, fmt.Errorf("remove %s: %s grants no such action in an Action list", action, function)
	}
	out = append(out, lines[end:]...)
	return []byte(strings.Join(out, "\n")), nil
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
