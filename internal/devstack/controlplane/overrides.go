package controlplane

import (
	"fmt"
	"strings"
)

// ParseParameterOverrides reads sam deploy's --parameter-overrides form: Key=Value
// pairs separated by spaces, a value in double quotes when it holds one.
func ParseParameterOverrides(s string) (map[string]string, error) {
	out := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		key, rest, ok := strings.Cut(s, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \"") {
			return nil, fmt.Errorf("%q: want Key=Value", s)
		}
		var value string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, fmt.Errorf("%s: unterminated quote", key)
			}
			value, s = rest[1:end+1], rest[end+2:]
		} else {
			value, s, _ = strings.Cut(rest, " ")
		}
		out[key] = value
	}
	return out, nil
}
