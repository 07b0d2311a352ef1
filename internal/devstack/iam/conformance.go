package iam

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Grant is one (action pattern, resource pattern) an Allow statement of a
// function's inline policies grants.
type Grant struct {
	Function, Policy, Action, Resource string
}

func (g Grant) String() string { return g.Function + " " + g.Action + " " + g.Resource }

// Justification keeps a grant no local run exercises, with the reason.
type Justification struct {
	Function, Action, Resource string // Action and Resource may use * and ?
	Reason                     string
}

func (j Justification) covers(g Grant) bool {
	return j.Function == g.Function && matchAction(j.Action, g.Action) && glob(j.Resource, g.Resource)
}

// ReadJustifications reads lines "Function action resource-pattern reason…"
// ('#' starts a comment line).
func ReadJustifications(path string) ([]Justification, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Justification
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 {
			return nil, fmt.Errorf("%s:%d: want \"Function action resource reason…\"", path, n)
		}
		out = append(out, Justification{Function: fields[0], Action: fields[1], Resource: fields[2], Reason: strings.Join(fields[3:], " ")})
	}
	return out, sc.Err()
}

// Finding is a seen call or a service need and how the policies decide it now.
type Finding struct {
	Call
	Sources []string // the records (e2e packages) that saw it, or why Lambda needs it
}

// Report is the IAM conformance of recorded runs to the current policies.
type Report struct {
	// Denied are calls seen in the runs that the policies do not allow.
	Denied []Finding
	// NeedsDenied are calls Lambda makes with a role (event source mappings,
	// destinations, DLQs) that the role does not allow.
	NeedsDenied []Finding
	// Exercised counts, per function, the distinct (action, resource) seen.
	Exercised map[string]int
	// Unexercised are grants nothing seen or needed used, without a
	// justification: candidates for removal.
	Unexercised []Grant
	// Kept are unexercised grants with their justification.
	Kept []struct {
		Grant
		Reason string
	}
	// UnusedJustifications match no unexercised grant in this run (the
	// tests happened to exercise it, or the grant is gone): informational,
	// since which priority queue a retry lands on varies between runs.
	UnusedJustifications []Justification
}

// OK reports whether nothing is denied and every grant is exercised or justified.
func (r *Report) OK() bool {
	return len(r.Denied) == 0 && len(r.NeedsDenied) == 0 && len(r.Unexercised) == 0
}

// Conformance re-evaluates every call seen in records against p, checks the
// service needs, and lists the grants nothing exercised.
func Conformance(p *Policies, records []Record, justified []Justification) *Report {
	r := &Report{Exercised: map[string]int{}}
	type key struct{ fn, action, resource, context string }
	seen := map[key][]string{}
	var order []key
	for _, rec := range records {
		for _, c := range rec.Calls {
			k := key{c.Function, c.Action, c.Resource, c.Context}
			if _, ok := seen[k]; !ok {
				order = append(order, k)
			}
			seen[k] = append(seen[k], rec.Source)
		}
	}
	var used []Request
	usedBy := map[int]string{}
	for _, k := range order {
		c := Call{Function: k.fn, Action: k.action, Resource: k.resource, Context: k.context}
		var ctx map[string][]string
		if k.context != "" {
			_ = json.Unmarshal([]byte(k.context), &ctx) // written by recordedContext
		}
		role, ok := p.Role(k.fn)
		d := ImplicitDeny
		if ok && k.action != "?" {
			d, _ = role.Evaluate(Request{Action: k.action, Resource: k.resource, Context: ctx})
		}
		c.Decision = d.String()
		if d != Allowed {
			r.Denied = append(r.Denied, Finding{Call: c, Sources: slices.Compact(slices.Sorted(slices.Values(seen[k])))})
			continue
		}
		r.Exercised[k.fn]++
		usedBy[len(used)] = k.fn
		used = append(used, Request{Action: k.action, Resource: k.resource, Context: ctx})
	}
	for _, n := range p.ServiceNeeds {
		role, ok := p.Role(n.Function)
		d := ImplicitDeny
		if ok {
			d, _ = role.Evaluate(Request{Action: n.Action, Resource: n.Resource})
		}
		if d != Allowed {
			r.NeedsDenied = append(r.NeedsDenied, Finding{Call: Call{Function: n.Function, Action: n.Action, Resource: n.Resource, Decision: d.String()}, Sources: []string{n.Why}})
			continue
		}
		usedBy[len(used)] = n.Function
		used = append(used, Request{Action: n.Action, Resource: n.Resource})
	}
	justUsed := make([]bool, len(justified))
	for _, fn := range p.FunctionNames() {
		for _, st := range p.Functions[fn].Statements() {
			if st.Effect != Allow || !strings.HasPrefix(st.Policy, fn) && !strings.HasPrefix(st.Policy, "DeadLetterQueuePolicy") {
				continue // AWS managed policies: used by the Lambda service itself (logs, X-Ray)
			}
			for _, a := range st.Action {
				for _, res := range st.Resource {
					g := Grant{Function: fn, Policy: st.Policy, Action: a, Resource: res}
					exercised := false
					for i, u := range used {
						if usedBy[i] == fn && matchAction(a, u.Action) && MatchResource(res, u.Resource) {
							exercised = true
							break
						}
					}
					if exercised {
						continue
					}
					kept := false
					for i, j := range justified {
						if j.covers(g) {
							justUsed[i], kept = true, true
							r.Kept = append(r.Kept, struct {
								Grant
								Reason string
							}{g, j.Reason})
							break
						}
					}
					if !kept {
						r.Unexercised = append(r.Unexercised, g)
					}
				}
			}
		}
	}
	for i, j := range justified {
		if !justUsed[i] {
			r.UnusedJustifications = append(r.UnusedJustifications, j)
		}
	}
	return r
}

// WriteBrief writes the report in full when verbose or when it is not OK
// (what to fix needs every line); otherwise a two-line summary, without the
// per-function counts and the kept grants' justifications.
func (r *Report) WriteBrief(w io.Writer, verbose bool) {
	if verbose || !r.OK() {
		r.Write(w)
		return
	}
	calls := 0
	for _, n := range r.Exercised {
		calls += n
	}
	fmt.Fprintf(w, "IAM conformance: %d distinct (action, resource) calls of %d functions, all allowed by their roles\n", calls, len(r.Exercised))
	fmt.Fprintf(w, "Least privilege: every grant exercised, or kept with its reason in scripts/iam/unexercised.txt (%d kept; -v lists them)\n", len(r.Kept))
}

// Write prints the report for people.
func (r *Report) Write(w io.Writer) {
	fmt.Fprintln(w, "IAM conformance: calls seen in the e2e runs, against the roles of the transformed template")
	for _, fn := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.Exercised {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(w, "  %-18s %d distinct (action, resource) allowed\n", fn, r.Exercised[fn])
	}
	section := func(title string, n int) bool {
		if n > 0 {
			fmt.Fprintf(w, "%s (%d):\n", title, n)
		}
		return n > 0
	}
	if section("DENIED: calls the functions make that their roles do not allow", len(r.Denied)) {
		for _, f := range r.Denied {
			fmt.Fprintf(w, "  %s: %s on %s (%s; seen in %s)\n", f.Function, f.Action, f.Resource, f.Decision, strings.Join(f.Sources, ", "))
		}
	}
	if section("DENIED: calls Lambda makes with the function's role", len(r.NeedsDenied)) {
		for _, f := range r.NeedsDenied {
			fmt.Fprintf(w, "  %s: %s on %s (%s; %s)\n", f.Function, f.Action, f.Resource, f.Decision, f.Sources[0])
		}
	}
	fmt.Fprintln(w, "Least privilege: grants no e2e call or Lambda service need exercised")
	if len(r.Unexercised) == 0 {
		fmt.Fprintln(w, "  none unexplained")
	}
	for _, g := range r.Unexercised {
		fmt.Fprintf(w, "  UNUSED %s (policy %s): remove it, or exercise it in a test, or justify it in scripts/iam/unexercised.txt\n", g, g.Policy)
	}
	for _, k := range r.Kept {
		fmt.Fprintf(w, "  kept   %s: %s\n", k.Grant, k.Reason)
	}
	for _, j := range r.UnusedJustifications {
		fmt.Fprintf(w, "  (justification %s %s %s matched no unexercised grant in this run)\n", j.Function, j.Action, j.Resource)
	}
}
