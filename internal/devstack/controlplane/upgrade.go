package controlplane

import (
	"fmt"
	"regexp"
	"strings"
)

// KeepIndex returns the template next with the global secondary index name
// of the released template kept: its definition (as released) and its key
// attributes' definitions put back into next's table. It builds the
// intermediate template of an upgrade that drops an index only once nothing
// reads it (README, "Upgrading"): a step whose stack update from the release
// changes no index, followed by next, which deletes it. Text-level, for
// Herald's template (one table; each index an "- IndexName: <name>" item).
func KeepIndex(next, released []byte, name string) ([]byte, error) {
	block, indent, err := indexBlock(string(released), name)
	if err != nil {
		return nil, fmt.Errorf("released template: %w", err)
	}
	out := string(next)
	if _, _, err := indexBlock(out, name); err == nil {
		return nil, fmt.Errorf("template already has index %s", name)
	}
	gsis := regexp.MustCompile(`(?m)^( *)GlobalSecondaryIndexes:\n`)
	loc := gsis.FindStringIndex(out)
	if loc == nil {
		return nil, fmt.Errorf("template has no GlobalSecondaryIndexes")
	}
	if !strings.HasPrefix(out[loc[1]:], indent+"- ") && !strings.HasPrefix(strings.TrimLeft(out[loc[1]:], " "), "#") {
		return nil, fmt.Errorf("template's indexes are not indented as the released ones (%q)", indent)
	}
	out = out[:loc[1]] + block + out[loc[1]:]
	// Its key attributes, defined as released, unless still defined.
	for _, m := range regexp.MustCompile(`AttributeName: (\w+)`).FindAllStringSubmatch(block, -1) {
		attr := m[1]
		def := regexp.MustCompile(`(?m)^ *- \{AttributeName: ` + attr + `, AttributeType: \w+\}\n`)
		if def.MatchString(out) {
			continue
		}
		line := def.FindString(string(released))
		if line == "" {
			return nil, fmt.Errorf("released template does not define attribute %s", attr)
		}
		defs := regexp.MustCompile(`(?m)^ *AttributeDefinitions:\n`)
		at := defs.FindStringIndex(out)
		if at == nil {
			return nil, fmt.Errorf("template has no AttributeDefinitions")
		}
		out = out[:at[1]] + line + out[at[1]:]
	}
	return []byte(out), nil
}

// indexBlock returns the lines of the index item named name, and its
// indentation.
func indexBlock(raw, name string) (string, string, error) {
	start := regexp.MustCompile(`(?m)^( *)- IndexName: ` + regexp.QuoteMeta(name) + `\s*\n`)
	loc := start.FindStringSubmatchIndex(raw)
	if loc == nil {
		return "", "", fmt.Errorf("no index %s", name)
	}
	indent := raw[loc[2]:loc[3]]
	end := loc[1]
	for end < len(raw) {
		nl := strings.IndexByte(raw[end:], '\n')
		line := raw[end:]
		if nl >= 0 {
			line = raw[end : end+nl+1]
		}
		trimmed := strings.TrimLeft(line, " ")
		// The item goes on while lines are indented deeper than its dash.
		if trimmed == "\n" || trimmed == "" || len(line)-len(trimmed) <= len(indent) {
			break
		}
		end += len(line)
	}
	return raw[loc[0]:end], indent, nil
}
