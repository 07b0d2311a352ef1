package catalog

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"text/template/parse"
	"unicode/utf8"
)

// Catalog templates are written in text/template's syntax and parsed by its
// parser (text/template/parse), but executed here rather than by
// text/template or html/template. Executing those links reflect's method
// lookup (Value.MethodByName), after which the linker must keep every
// exported method of every type converted to an interface anywhere in the
// program: about 2.5 MB of each function that renders (docs/decisions.md,
// "Catalog templates: our own executor").
//
// The subset is what the catalog's files use, checked when a template is
// parsed (so a catalog using anything else fails its load, and the tests):
//
//	{{.name}} {{.a.b}}              a field of the data (maps with string keys)
//	{{(index .items 0).url}}        index, with a parenthesised pipeline and fields
//	{{if …}} … {{else}} … {{end}}   text/template's truth
//	{{range .items}} … {{end}}      over a slice; the element is the dot
//
// No variables, no pipes, no other functions, no with/template/define/block.
// Values print as text/template prints them, and a missing map key is an
// error (the catalog's missingkey=error).
//
// An HTML template (the email's html part) is escaped by its HTML context,
// with html/template's rules for the contexts allowed: text (htmlEscaper),
// a quoted attribute value of a plain attribute (attrEscaper) and the start
// of a quoted href or src value (urlFilter, urlNormalizer, attrEscaper: a
// scheme other than http, https or mailto becomes "#ZgotmplZ"). An action
// anywhere else — script, style, title, textarea or meta content, comments,
// event handler or style attributes, unquoted values, inside a tag or a URL —
// fails the parse, and so does a '<' that opens no tag (html/template would
// rewrite it; the author writes &lt;), so static text is output as written.
// template_test.go renders every catalog template and a corpus
// of small ones with both engines on hostile data and requires identical
// output.
type tmpl struct {
	name string
	src  string // kept for the equivalence tests
	tree *parse.Tree
	html bool
	// esc is how each action of an HTML template escapes its value, decided
	// from the action's HTML context at parse time.
	esc map[*parse.ActionNode]escapeMode
}

// Name is the template's name (e.g. "email.subject").
func (t *tmpl) Name() string { return t.name }

type escapeMode uint8

const (
	escNone escapeMode = iota // a text template: printed as is
	escText                   // HTML text
	escAttr                   // a quoted value of a plain attribute
	escURL                    // the start of a quoted href or src value
)

// templateFuncs are the functions a catalog template may call (the parser
// only checks the names).
var templateFuncs = map[string]any{"index": true}

func parseText(name, src string) (*tmpl, error) { return parseTemplate(name, src, false) }

func parseHTML(name, src string) (*tmpl, error) { return parseTemplate(name, src, true) }

func parseTemplate(name, src string, html bool) (*tmpl, error) {
	trees, err := parse.Parse(name, src, "", "", templateFuncs)
	if err != nil {
		return nil, err
	}
	tree := trees[name]
	if len(trees) != 1 || tree == nil {
		return nil, fmt.Errorf("template: %s: define, block and template are not supported in catalog templates", name)
	}
	t := &tmpl{name: name, src: src, tree: tree, html: html}
	c := checker{t: t}
	if html {
		t.esc = map[*parse.ActionNode]escapeMode{}
	}
	if err := c.list(tree.Root); err != nil {
		return nil, err
	}
	if html && c.ctx.state != hText {
		return nil, fmt.Errorf("template: %s: ends inside a tag or an attribute", name)
	}
	return t, nil
}

// checker walks a parsed template: the syntax subset, and for HTML the
// context of every action.
type checker struct {
	t   *tmpl
	ctx htmlContext
}

func (c *checker) fail(n parse.Node, format string, args ...any) error {
	loc, _ := c.t.tree.ErrorContext(n)
	return fmt.Errorf("template: %s: %s", loc, fmt.Sprintf(format, args...))
}

func (c *checker) list(l *parse.ListNode) error {
	if l == nil {
		return nil
	}
	for _, n := range l.Nodes {
		if err := c.node(n); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) node(n parse.Node) error {
	switch n := n.(type) {
	case *parse.TextNode:
		if c.t.html {
			if err := c.ctx.scan(n.Text); err != nil {
				return c.fail(n, "%v", err)
			}
		}
		return nil
	case *parse.ActionNode:
		if err := c.pipe(n.Pipe); err != nil {
			return err
		}
		if c.t.html {
			mode, err := c.ctx.action()
			if err != nil {
				return c.fail(n, "%s: %v", n, err)
			}
			c.t.esc[n] = mode
		}
		return nil
	case *parse.IfNode:
		return c.branches(n, n.Pipe, n.List, n.ElseList)
	case *parse.RangeNode:
		return c.branches(n, n.Pipe, n.List, n.ElseList)
	default:
		return c.fail(n, "%s is not supported in catalog templates", n)
	}
}

// branches checks an if or range. In HTML they may only stand in text and
// each branch must end in text, so the context after them is known.
func (c *checker) branches(n parse.Node, pipe *parse.PipeNode, lists ...*parse.ListNode) error {
	if err := c.pipe(pipe); err != nil {
		return err
	}
	if c.t.html && c.ctx.state != hText {
		return c.fail(n, "if and range may only stand in HTML text")
	}
	for _, l := range lists {
		if err := c.list(l); err != nil {
			return err
		}
		if c.t.html && c.ctx.state != hText {
			return c.fail(n, "a branch of if or range must end in HTML text")
		}
	}
	return nil
}

func (c *checker) pipe(p *parse.PipeNode) error {
	if len(p.Decl) > 0 {
		return c.fail(p, "variables are not supported in catalog templates")
	}
	if len(p.Cmds) != 1 {
		return c.fail(p, "pipes are not supported in catalog templates")
	}
	cmd := p.Cmds[0]
	if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok {
		if id.Ident != "index" || len(cmd.Args) < 2 {
			return c.fail(cmd, "%s: only index, with an item, is supported in catalog templates", cmd)
		}
		for _, a := range cmd.Args[1:] {
			if err := c.operand(a, true); err != nil {
				return err
			}
		}
		return nil
	}
	if len(cmd.Args) != 1 {
		return c.fail(cmd, "%s: method calls are not supported in catalog templates", cmd)
	}
	return c.operand(cmd.Args[0], false)
}

// operand checks a value: a field, the dot, a parenthesised pipeline with
// fields, and as an index argument an integer or string constant.
func (c *checker) operand(n parse.Node, indexArg bool) error {
	switch n := n.(type) {
	case *parse.FieldNode, *parse.DotNode:
		return nil
	case *parse.PipeNode:
		return c.pipe(n)
	case *parse.ChainNode:
		if p, ok := n.Node.(*parse.PipeNode); ok {
			return c.pipe(p)
		}
	case *parse.NumberNode:
		if indexArg && n.IsInt {
			return nil
		}
	case *parse.StringNode:
		if indexArg {
			return nil
		}
	}
	return c.fail(n, "%s is not supported in catalog templates", n)
}

// execute renders the template with data. An HTML template's values are
// escaped by their context; a text template's are printed as they are.
func (t *tmpl) execute(b *bytes.Buffer, data any) error {
	s := state{t: t, b: b}
	return s.walk(reflect.ValueOf(data), t.tree.Root)
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

type state struct {
	t *tmpl
	b *bytes.Buffer
}

func (s *state) fail(n parse.Node, format string, args ...any) error {
	loc, _ := s.t.tree.ErrorContext(n)
	return fmt.Errorf("template: %s: executing: %s", loc, fmt.Sprintf(format, args...))
}

func (s *state) walk(dot reflect.Value, n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if err := s.walk(dot, c); err != nil {
				return err
			}
		}
	case *parse.TextNode:
		s.b.Write(n.Text)
	case *parse.ActionNode:
		v, err := s.pipe(dot, n.Pipe)
		if err != nil {
			return err
		}
		return s.print(n, v, s.t.esc[n])
	case *parse.IfNode:
		v, err := s.pipe(dot, n.Pipe)
		if err != nil {
			return err
		}
		if truth(v) {
			return s.walk(dot, n.List)
		}
		if n.ElseList != nil {
			return s.walk(dot, n.ElseList)
		}
	case *parse.RangeNode:
		v, err := s.pipe(dot, n.Pipe)
		if err != nil {
			return err
		}
		v = indirect(v)
		switch v.Kind() {
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				if err := s.walk(v.Index(i), n.List); err != nil {
					return err
				}
			}
			if v.Len() > 0 {
				return nil
			}
		case reflect.Invalid: // nil: the else branch, as text/template
		default:
			return s.fail(n, "range can't iterate over %v", v)
		}
		if n.ElseList != nil {
			return s.walk(dot, n.ElseList)
		}
	default: // the parse-time check admits no other node
		return s.fail(n, "unexpected %s", n)
	}
	return nil
}

// pipe evaluates a checked pipeline. Like text/template, a value in an
// interface{} comes out as what it holds (a nil one as the invalid Value).
func (s *state) pipe(dot reflect.Value, p *parse.PipeNode) (reflect.Value, error) {
	v, err := s.command(dot, p.Cmds[0])
	if err != nil {
		return v, err
	}
	if v.Kind() == reflect.Interface && v.Type().NumMethod() == 0 {
		v = reflect.ValueOf(v.Interface())
	}
	return v, nil
}

func (s *state) command(dot reflect.Value, cmd *parse.CommandNode) (reflect.Value, error) {
	if _, ok := cmd.Args[0].(*parse.IdentifierNode); ok { // index, the only function
		item, err := s.arg(dot, cmd.Args[1])
		if err != nil {
			return item, err
		}
		for _, a := range cmd.Args[2:] {
			key, err := s.arg(dot, a)
			if err != nil {
				return key, err
			}
			if item, err = index(item, key); err != nil {
				return item, s.fail(cmd, "error calling index: %v", err)
			}
		}
		return item, nil
	}
	return s.arg(dot, cmd.Args[0])
}

func (s *state) arg(dot reflect.Value, n parse.Node) (reflect.Value, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.FieldNode:
		return s.fields(n, dot, n.Ident)
	case *parse.ChainNode:
		v, err := s.pipe(dot, n.Node.(*parse.PipeNode))
		if err != nil {
			return v, err
		}
		return s.fields(n, v, n.Field)
	case *parse.PipeNode:
		return s.pipe(dot, n)
	case *parse.NumberNode:
		return reflect.ValueOf(int(n.Int64)), nil
	case *parse.StringNode:
		return reflect.ValueOf(n.Text), nil
	}
	return reflect.Value{}, s.fail(n, "unexpected %s", n)
}

// fields looks up .a.b… in maps keyed by strings; a missing key is an error.
func (s *state) fields(n parse.Node, v reflect.Value, names []string) (reflect.Value, error) {
	for _, name := range names {
		v = indirect(v)
		if !v.IsValid() {
			return v, s.fail(n, "nil data; no entry for key %q", name)
		}
		if v.Kind() != reflect.Map || v.Type().Key().Kind() != reflect.String {
			return reflect.Value{}, s.fail(n, "can't evaluate field %s in type %s", name, v.Type())
		}
		e := v.MapIndex(reflect.ValueOf(name).Convert(v.Type().Key()))
		if !e.IsValid() {
			return e, s.fail(n, "map has no entry for key %q", name)
		}
		v = e
	}
	return v, nil
}

// index is text/template's index for one key: slices, arrays and strings by
// an integer, maps by a key of their key type (a missing key gives the zero
// value).
func index(item, key reflect.Value) (reflect.Value, error) {
	item, key = indirect(item), indirect(key)
	switch item.Kind() {
	case reflect.Slice, reflect.Array, reflect.String:
		var i int64
		switch key.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			i = key.Int()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			i = int64(key.Uint())
		default:
			return reflect.Value{}, fmt.Errorf("cannot index slice/array with type %v", key.Type())
		}
		if i < 0 || int(i) >= item.Len() {
			return reflect.Value{}, fmt.Errorf("index out of range: %d", i)
		}
		return item.Index(int(i)), nil
	case reflect.Map:
		if !key.IsValid() || !key.Type().AssignableTo(item.Type().Key()) {
			return reflect.Value{}, fmt.Errorf("value has type %v; should be %v", key.Type(), item.Type().Key())
		}
		if e := item.MapIndex(key); e.IsValid() {
			return e, nil
		}
		return reflect.Zero(item.Type().Elem()), nil
	case reflect.Invalid:
		return reflect.Value{}, fmt.Errorf("index of untyped nil")
	default:
		return reflect.Value{}, fmt.Errorf("can't index item of type %v", item.Type())
	}
}

// indirect unwraps interfaces and pointers.
func indirect(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// truth is text/template's: zero values and empty collections are false.
func truth(v reflect.Value) bool {
	v = indirect(v)
	switch v.Kind() {
	case reflect.Invalid:
		return false
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() != 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() != 0
	case reflect.Float32, reflect.Float64:
		return v.Float() != 0
	case reflect.Complex64, reflect.Complex128:
		return v.Complex() != 0
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return !v.IsNil()
	}
	return true // structs
}

// print writes a value as text/template prints it (fmt.Print; a missing
// value is "<no value>") or, in HTML, as html/template does (a missing value
// is empty), escaped for its context.
func (s *state) print(n parse.Node, v reflect.Value, mode escapeMode) error {
	var str string
	switch {
	case v.Kind() == reflect.Chan || v.Kind() == reflect.Func:
		return s.fail(n, "can't print %s of type %s", n, v.Type())
	case !v.IsValid() && mode == escNone:
		str = "<no value>"
	case !v.IsValid():
		str = ""
	case v.Kind() == reflect.String:
		str = v.String()
	default:
		str = fmt.Sprint(v.Interface())
	}
	switch mode {
	case escNone:
		s.b.WriteString(str)
	case escText, escAttr:
		writeHTMLEscaped(s.b, str)
	case escURL:
		if !isSafeURL(str) {
			str = "#ZgotmplZ"
		}
		writeHTMLEscaped(s.b, normalizeURL(str))
	}
	return nil
}

// writeHTMLEscaped is html/template's htmlEscaper and attrEscaper for plain
// strings: NUL, both quotes, '&', '+', '<' and '>' are replaced.
func writeHTMLEscaped(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch r {
		case 0:
			b.WriteString("\uFFFD")
		case '"':
			b.WriteString("&#34;")
		case '&':
			b.WriteString("&amp;")
		case '\'':
			b.WriteString("&#39;")
		case '+':
			b.WriteString("&#43;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteString(s[i : i+w])
		}
		i += w
	}
}

// isSafeURL is html/template's urlFilter test: a URL with a scheme must be
// http, https or mailto.
func isSafeURL(s string) bool {
	if scheme, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(scheme, "/") {
		return strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "mailto")
	}
	return true
}

// normalizeURL is html/template's urlNormalizer: it percent-encodes (lower
// case hex) every byte that is neither unreserved nor reserved in RFC 3986,
// plus the quote and parentheses, keeping valid %XX escapes.
func normalizeURL(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte("!#$&*+,/:;=?@[]-._~", c) >= 0,
			'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			continue
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			continue
		}
		b.WriteString(s[written:i])
		fmt.Fprintf(&b, "%%%02x", c)
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// htmlContext follows an HTML template's static text, far enough to know
// the context of each action (see tmpl).
type htmlContext struct {
	state htmlState
	quote byte     // hValue: the value's delimiter
	attr  attrKind // the attribute being read
	// used: text or an action already stands in the current URL value.
	used bool
}

type htmlState uint8

const (
	hText        htmlState = iota // between tags
	hTag                          // inside a tag, between attributes
	hAttrName                     // inside an attribute name
	hAfterName                    // after an attribute name
	hBeforeValue                  // after '='
	hValue                        // inside a quoted attribute value
	hUnquoted                     // inside an unquoted attribute value
)

type attrKind uint8

const (
	attrOther attrKind = iota // no action allowed in its value
	attrPlain                 // text: attrEscaper
	attrURL                   // href, src: a URL
)

// plainAttrs are attributes html/template treats as plain text, and so do we.
var plainAttrs = map[string]bool{"alt": true, "border": true, "class": true, "colspan": true, "dir": true, "height": true,
	"id": true, "lang": true, "name": true, "rowspan": true, "target": true, "title": true, "width": true}

// specialElements change how html/template reads their content (script,
// style, RCDATA) or their attributes (meta content): not in catalog HTML.
var specialElements = map[string]bool{"script": true, "style": true, "textarea": true, "title": true, "meta": true}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// scan advances the context over static text.
func (c *htmlContext) scan(s []byte) error {
	for i := 0; i < len(s); {
		switch c.state {
		case hText:
			j := bytes.IndexByte(s[i:], '<')
			if j < 0 {
				return nil
			}
			i += j + 1
			if i < len(s) && (s[i] == '!' || s[i] == '?') {
				return fmt.Errorf("comments, doctypes and processing instructions (%.8q) are not supported in catalog HTML", s[i-1:])
			}
			if i < len(s) && s[i] == '/' {
				i++
			}
			if i == len(s) || !isAlpha(s[i]) {
				// html/template would rewrite it to "&lt;": the author writes
				// that, so the template's text is output as written.
				return fmt.Errorf("a '<' that opens no tag (write &lt;)")
			}
			j = i + 1
			for j < len(s) && (isAlpha(s[j]) || '0' <= s[j] && s[j] <= '9' || (s[j] == '-' || s[j] == ':') && j+1 < len(s) && isAlpha(s[j+1])) {
				j++
			}
			if name := strings.ToLower(string(s[i:j])); specialElements[name] {
				return fmt.Errorf("<%s> is not supported in catalog HTML", name)
			}
			c.state, i = hTag, j
		case hTag:
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			if i == len(s) {
				return nil
			}
			if s[i] == '>' {
				c.state = hText
				i++
				continue
			}
			j := i
			for j < len(s) && !isSpace(s[j]) && s[j] != '=' && s[j] != '>' {
				if s[j] == '"' || s[j] == '\'' || s[j] == '<' {
					return fmt.Errorf("%q in an attribute name", s[j])
				}
				j++
			}
			name := strings.ToLower(string(s[i:j]))
			switch {
			case name == "href" || name == "src":
				c.attr = attrURL
			case plainAttrs[name]:
				c.attr = attrPlain
			default:
				c.attr = attrOther
			}
			c.state, i = hAfterName, j
			if j == len(s) {
				c.state = hAttrName
			}
		case hAttrName:
			return fmt.Errorf("an attribute name split by an action")
		case hAfterName:
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			switch {
			case i == len(s):
			case s[i] == '=':
				c.state = hBeforeValue
				i++
			default:
				c.state = hTag
			}
		case hBeforeValue:
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			switch {
			case i == len(s):
			case s[i] == '"' || s[i] == '\'':
				c.state, c.quote, c.used = hValue, s[i], false
				i++
			case s[i] == '>':
				c.state = hText
				i++
			default:
				c.state = hUnquoted
			}
		case hValue:
			j := bytes.IndexByte(s[i:], c.quote)
			if j < 0 {
				c.used = true
				return nil
			}
			c.used = c.used || j > 0
			c.state, i = hTag, i+j+1
		case hUnquoted:
			for i < len(s) && !isSpace(s[i]) && s[i] != '>' {
				i++
			}
			if i < len(s) {
				c.state = hTag
			}
		}
	}
	return nil
}

// action is the escaping of an action in the current context, or why an
// action cannot stand there.
func (c *htmlContext) action() (escapeMode, error) {
	switch {
	case c.state == hText:
		return escText, nil
	case c.state == hValue && c.attr == attrPlain:
		return escAttr, nil
	case c.state == hValue && c.attr == attrURL && !c.used:
		c.used = true
		return escURL, nil
	case c.state == hValue && c.attr == attrURL:
		return 0, fmt.Errorf("an action in a URL attribute must be the whole start of its value")
	case c.state == hValue:
		return 0, fmt.Errorf("actions are allowed in the values of href, src and plain text attributes (%s) only", "alt, class, title, …")
	default:
		return 0, fmt.Errorf("actions are allowed in HTML text and quoted attribute values only")
	}
}
