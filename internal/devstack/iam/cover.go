package iam

import (
	"slices"
)

// Uncovered lists the distinct calls (function, action, resource) seen in
// records whose source is not in subset, and in none of the subset's, that
// no justification covers: what a run of only the subset's packages would
// no longer check against the roles. `make aws-check` records a subset of
// the e2e packages to stay fast; `make test`, which records all of them,
// fails on any call only a left-out package makes. Calls a justification
// covers vary between runs (the priority queue a retry lands on) and are
// allowed to go unexercised anyway.
func Uncovered(records []Record, subset []string, justified []Justification) []Finding {
	type key struct{ fn, action, resource string }
	in := map[key]bool{}
	for _, r := range records {
		if slices.Contains(subset, r.Source) {
			for _, c := range r.Calls {
				in[key{c.Function, c.Action, c.Resource}] = true
			}
		}
	}
	var out []Finding
	at := map[key]int{}
	for _, r := range records {
		if slices.Contains(subset, r.Source) {
			continue
		}
		for _, c := range r.Calls {
			k := key{c.Function, c.Action, c.Resource}
			if in[k] || slices.ContainsFunc(justified, func(j Justification) bool {
				return j.covers(Grant{Function: c.Function, Action: c.Action, Resource: c.Resource})
			}) {
				continue
			}
			if i, ok := at[k]; ok {
				out[i].Sources = append(out[i].Sources, r.Source)
				continue
			}
			at[k] = len(out)
			out = append(out, Finding{Call: Call{Function: c.Function, Action: c.Action, Resource: c.Resource}, Sources: []string{r.Source}})
		}
	}
	return out
}
