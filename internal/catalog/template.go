package catalog

import (
	"bytes"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io"
	"strings"
	"text/template"
	"text/template/parse"
)

// Catalog templates are text/template templates (subjects, text email, SMS,
// push and in-app) and html/template templates (the email's html part),
// executed by those packages with missingkey=error. On top of what the
// standard library checks, a template fails the catalog load when
//
//   - it uses a variable the type does not declare (checkFields),
//   - it defines or calls other templates (define, block, template), whose
//     fields that check would not see,
//   - in HTML, an action stands where html/template would escape it for
//     JavaScript or CSS (script and style elements, event handler and style
//     attributes): catalog values are text and URLs, never code.
//
// An HTML template is escaped when it is loaded, so a context error
// (html/template's ErrBranchEnd, ErrEndContext, …) fails the load too, not a
// send. testdata/renders.golden holds every catalog render of the engine the
// catalog used before; golden_test.go requires the same bytes.
type tmpl struct {
	name string
	tree *parse.Tree // the parsed template, for the field checks
	html bool
	text *template.Template
	htm  *htmltemplate.Template
}

// Name is the template's name (e.g. "email.subject").
func (t *tmpl) Name() string { return t.name }

func parseText(name, src string) (*tmpl, error) {
	tt, err := template.New(name).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, err
	}
	if err := singleTemplate(name, len(tt.Templates()), tt.Tree); err != nil {
		return nil, err
	}
	return &tmpl{name: name, tree: tt.Tree, text: tt}, nil
}

func parseHTML(name, src string) (*tmpl, error) {
	ht, err := htmltemplate.New(name).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, err
	}
	if err := singleTemplate(name, len(ht.Templates()), ht.Tree); err != nil {
		return nil, err
	}
	// The fields are read from a copy: escaping adds html/template's escapers
	// to the tree, not fields, but the copy is the template as written.
	tree := ht.Tree.Copy()
	// html/template escapes a template on its first execution: do it now.
	// Only an escaping error matters here (executing without data fails on
	// the first field, after escaping).
	var escErr *htmltemplate.Error
	if err := ht.Execute(io.Discard, nil); errors.As(err, &escErr) {
		return nil, err
	}
	if err := noScriptContexts(name, ht.Tree); err != nil {
		return nil, err
	}
	return &tmpl{name: name, tree: tree, html: true, htm: ht}, nil
}

// singleTemplate rejects define, block and template: a catalog template is
// one tree, all of whose fields checkFields sees.
func singleTemplate(name string, n int, tree *parse.Tree) error {
	if n != 1 || tree == nil || walkNodes(tree.Root, func(n parse.Node) bool { _, ok := n.(*parse.TemplateNode); return ok }) != nil {
		return fmt.Errorf("template: %s: define, block and template are not supported in catalog templates", name)
	}
	return nil
}

// noScriptContexts rejects an escaped HTML template in which html/template
// escapes an action for JavaScript or CSS.
func noScriptContexts(name string, tree *parse.Tree) error {
	bad := walkNodes(tree.Root, func(n parse.Node) bool {
		id, ok := n.(*parse.IdentifierNode)
		if !ok {
			return false
		}
		e := strings.TrimPrefix(id.Ident, "_html_template_")
		return e != id.Ident && (strings.HasPrefix(e, "js") || strings.HasPrefix(e, "css"))
	})
	if bad == nil {
		return nil
	}
	loc, _ := tree.ErrorContext(bad)
	return fmt.Errorf("template: %s: an action in a script or style context (script, style, event handler or style attribute) is not supported in catalog HTML", loc)
}

// walkNodes returns the first node of the tree below n for which match is
// true, or nil.
func walkNodes(n parse.Node, match func(parse.Node) bool) parse.Node {
	if n == nil || match(n) {
		return n
	}
	var kids []parse.Node
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		kids = n.Nodes
	case *parse.ActionNode:
		kids = []parse.Node{n.Pipe}
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Cmds {
			kids = append(kids, c)
		}
	case *parse.CommandNode:
		kids = n.Args
	case *parse.ChainNode:
		kids = []parse.Node{n.Node}
	case *parse.IfNode:
		kids = []parse.Node{n.Pipe, n.List, n.ElseList}
	case *parse.RangeNode:
		kids = []parse.Node{n.Pipe, n.List, n.ElseList}
	case *parse.WithNode:
		kids = []parse.Node{n.Pipe, n.List, n.ElseList}
	case *parse.TemplateNode:
		kids = []parse.Node{n.Pipe}
	}
	for _, k := range kids {
		if k == nil || isNilNode(k) {
			continue
		}
		if m := walkNodes(k, match); m != nil {
			return m
		}
	}
	return nil
}

// isNilNode reports a typed nil (an absent else list or pipeline).
func isNilNode(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.ListNode:
		return n == nil
	case *parse.PipeNode:
		return n == nil
	}
	return false
}

// execute renders the template with data.
func (t *tmpl) execute(b *bytes.Buffer, data any) error {
	if t.html {
		return t.htm.Execute(b, data)
	}
	return t.text.Execute(b, data)
}

// executeString renders a text template and trims surrounding space (the
// YAML block scalars end in a newline).
func executeString(t *tmpl, data map[string]any) (string, error) {
	if t == nil {
		return "", nil
	}
	var b bytes.Buffer
	if err := t.execute(&b, data); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}
