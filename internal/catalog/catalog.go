// Package catalog holds Herald's notification types: reviewable YAML files in
// types/, embedded in every binary. A type declares its default priority and
// channels, whether it is mandatory, the variables it accepts and its templates
// per channel and locale. Everything is parsed and checked when the catalog
// loads, so a bad template fails tests and startup, never a send.
package catalog

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"text/template/parse"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/heraldhq/herald/internal/domain"
)

//go:embed types/*.yaml
var embedded embed.FS

// DefaultLocale is the last step of locale fallback.
const DefaultLocale = "en"

// Kind names a rendering target. Channels map one to one; the inbox is "inapp".
type Kind string

const (
	KindEmail Kind = "email"
	KindSMS   Kind = "sms"
	KindPush  Kind = "push"
	KindInApp Kind = "inapp"
)

// KindOf maps a delivery channel to its template kind.
func KindOf(c domain.Channel) Kind { return Kind(c) }

// Variable declares one template variable.
type Variable struct {
	// Kind: text (default), url (absolute http/https URL) or code (short token such as an OTP).
	Kind string `yaml:"kind"`
	// Personal marks data about a person; lint forbids it in SMS and push text,
	// which end up on lock screens and in provider logs.
	Personal  bool `yaml:"personal"`
	MaxLength int  `yaml:"maxLength"`
}

// Type is one notification type.
type Type struct {
	Name       string
	Priority   domain.Priority
	Channels   []domain.Channel
	Mandatory  bool
	Digestible bool
	// DefaultExpiry, when set, bounds how long a notification of this type stays
	// deliverable if the caller gives no expiresAt (e.g. one-time codes).
	DefaultExpiry time.Duration
	// Escalations are the per-channel rules (delay, presence, read state);
	// channels without one send at once.
	Escalations   map[domain.Channel]Escalation
	Variables     map[string]Variable
	variableNames []string // sorted, for ValidateData
	locales       map[string]*localeTemplates
	// budget is the type's own notification budget (budget.go); nil: its
	// priority's default.
	budget *domain.Budget
	// links is the stack's link policy (WithLinkPolicy); the zero value
	// admits https links to any host.
	links domain.LinkPolicy
}

type localeTemplates struct {
	// label is the type's name shown to end users (the preference center).
	label string
	email *emailTemplates
	sms   *tmpl
	push  *linkTemplates
	inapp *linkTemplates
	// digest is the optional `digest:` section (digest.go).
	digest *digestTemplates
}

type emailTemplates struct {
	subject, text *tmpl
	html          *tmpl // html/template (template.go)
}

type linkTemplates struct{ title, body, url *tmpl }

// Content is a rendered message. Fields not used by a kind are empty.
type Content struct {
	Subject string // email
	Text    string // email text part, SMS text
	HTML    string // email HTML part (auto-escaped)
	Title   string // push (browsers and native devices alike), inapp
	Body    string // push, inapp
	URL     string // push, inapp
}

// Catalog is the immutable set of types.
type Catalog struct {
	types map[string]*Type
	// budgetDigest renders budget digests (budget.go); not a type callers
	// can send.
	budgetDigest *Type
}

// Load parses the embedded catalog.
func Load() (*Catalog, error) { return LoadFS(embedded, "types") }

// MustLoad is Load for program start-up and tests, where a broken embedded
// catalog is a build defect.
func MustLoad() *Catalog {
	c, err := Load()
	if err != nil {
		panic(err)
	}
	return c
}

// LoadWithoutSampleRenders parses the embedded catalog like Load but skips
// executing the digest templates on sample data. It is for functions that
// plan deliveries and never render (the relay), which then link no template
// executor. The functions that render load with Load, so a digest typo still
// fails them at start, never a send.
func LoadWithoutSampleRenders() (*Catalog, error) { return parseFS(embedded, "types") }

// LoadFS parses every *.yaml file in dir and executes each digest template
// once on sample data.
func LoadFS(fsys fs.FS, dir string) (*Catalog, error) {
	c, err := parseFS(fsys, dir)
	if err != nil {
		return nil, err
	}
	for _, name := range c.Names() {
		if err := c.types[name].renderDigestSamples(); err != nil {
			return nil, fmt.Errorf("catalog %s.yaml: %w", name, err)
		}
	}
	if err := c.budgetDigest.renderDigestSamples(); err != nil {
		return nil, fmt.Errorf("catalog budget.yaml: %w", err)
	}
	return c, nil
}

// parseFS parses every *.yaml file in dir.
func parseFS(fsys fs.FS, dir string) (*Catalog, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	budget, err := parseType(budgetDigestYAML)
	if err != nil {
		return nil, fmt.Errorf("catalog budget.yaml: %w", err)
	}
	c := &Catalog{types: map[string]*Type{}, budgetDigest: budget}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".yaml" {
			continue
		}
		raw, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Name(), err)
		}
		t, err := parseType(raw)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", e.Name(), err)
		}
		if want := t.Name + ".yaml"; e.Name() != want {
			return nil, fmt.Errorf("catalog %s: file must be named %s", e.Name(), want)
		}
		c.types[t.Name] = t
	}
	return c, nil
}

// Lookup returns a type by name.
func (c *Catalog) Lookup(name string) (*Type, bool) {
	t, ok := c.types[name]
	return t, ok
}

// Names lists the type names, sorted.
func (c *Catalog) Names() []string {
	return slices.Sorted(maps.Keys(c.types))
}

// HasChannel reports whether the type can be delivered on c.
func (t *Type) HasChannel(c domain.Channel) bool { return slices.Contains(t.Channels, c) }

// Locales lists the locales the type has templates for, sorted.
func (t *Type) Locales() []string {
	return slices.Sorted(maps.Keys(t.locales))
}

// ResolveLocale picks the best available locale: exact ("ja-JP"), then the
// language ("ja"), then DefaultLocale.
func (t *Type) ResolveLocale(locale string) string {
	for l := locale; l != ""; {
		for have := range t.locales {
			if strings.EqualFold(have, l) {
				return have
			}
		}
		i := strings.LastIndexAny(l, "-_")
		if i < 0 {
			break
		}
		l = l[:i]
	}
	return DefaultLocale
}

// maxLabelLength bounds a type's user-facing label.
const maxLabelLength = 80

// Label is the type's name for end users in the best locale for `locale`
// (the locale's `label:`, else the default locale's, else the type name).
func (t *Type) Label(locale string) string {
	if lt := t.locales[t.ResolveLocale(locale)]; lt != nil && lt.label != "" {
		return lt.label
	}
	if lt := t.locales[DefaultLocale]; lt != nil && lt.label != "" {
		return lt.label
	}
	return t.Name
}

// ErrNoTemplate: the type has no template for that kind.
var ErrNoTemplate = errors.New("no template")

// Render renders the type's template of the given kind in the best locale for
// `locale`. data must already have passed ValidateData; a link the type's
// policy refuses now (data accepted before the policy changed) is rendered
// empty.
func (t *Type) Render(kind Kind, locale string, data map[string]any) (Content, error) {
	lt := t.locales[t.ResolveLocale(locale)]
	data = t.allowedLinks(data)
	var c Content
	var err error
	switch kind {
	case KindEmail:
		if lt.email == nil {
			return c, fmt.Errorf("render %s email: %w", t.Name, ErrNoTemplate)
		}
		c.Subject, err = executeString(lt.email.subject, data)
		if err == nil {
			c.Text, err = executeString(lt.email.text, data)
		}
		if err == nil {
			var b bytes.Buffer
			err = lt.email.html.execute(&b, data)
			c.HTML = b.String()
		}
	case KindSMS:
		if lt.sms == nil {
			return c, fmt.Errorf("render %s sms: %w", t.Name, ErrNoTemplate)
		}
		c.Text, err = executeString(lt.sms, data)
	case KindPush, KindInApp:
		lk := lt.push
		if kind == KindInApp {
			lk = lt.inapp
		}
		if lk == nil {
			return c, fmt.Errorf("render %s %s: %w", t.Name, kind, ErrNoTemplate)
		}
		c.Title, err = executeString(lk.title, data)
		if err == nil {
			c.Body, err = executeString(lk.body, data)
		}
		if err == nil {
			c.URL, err = executeString(lk.url, data)
		}
	default:
		return c, fmt.Errorf("render %s: unknown kind %q", t.Name, kind)
	}
	if err != nil {
		return Content{}, fmt.Errorf("render %s %s: %w", t.Name, kind, err)
	}
	return c, nil
}

// fileType is the YAML shape of a type file.
type fileType struct {
	Type       string                    `yaml:"type"`
	Priority   string                    `yaml:"priority"`
	Channels   []string                  `yaml:"channels"`
	Mandatory  bool                      `yaml:"mandatory"`
	Digestible bool                      `yaml:"digestible"`
	Expiry     string                    `yaml:"expiry"`
	Escalation map[string]fileEscalation `yaml:"escalation"`
	Budget     *fileBudget               `yaml:"budget"`
	Variables  map[string]Variable       `yaml:"variables"`
	Templates  map[string]fileLocaleTmpl `yaml:"templates"`
	Extra      map[string]any            `yaml:",inline"`
}

type fileLocaleTmpl struct {
	Label  string      `yaml:"label"`
	Email  *fileEmail  `yaml:"email"`
	SMS    *fileSMS    `yaml:"sms"`
	Push   *fileLink   `yaml:"push"`
	InApp  *fileLink   `yaml:"inapp"`
	Digest *fileDigest `yaml:"digest"`
}

type fileEmail struct {
	Subject string `yaml:"subject"`
	Text    string `yaml:"text"`
	HTML    string `yaml:"html"`
}

type fileSMS struct {
	Text string `yaml:"text"`
}

type fileLink struct {
	Title string `yaml:"title"`
	Body  string `yaml:"body"`
	URL   string `yaml:"url"`
}

func parseType(raw []byte) (*Type, error) {
	var f fileType
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if len(f.Extra) > 0 {
		return nil, fmt.Errorf("unknown fields %v", slices.Sorted(maps.Keys(f.Extra)))
	}
	if f.Type == "" {
		return nil, errors.New("type is required")
	}
	t := &Type{Name: f.Type, Mandatory: f.Mandatory, Digestible: f.Digestible, Variables: f.Variables, locales: map[string]*localeTemplates{}}
	if t.Variables == nil {
		t.Variables = map[string]Variable{}
	}
	for name, v := range t.Variables {
		switch v.Kind {
		case "":
			v.Kind = "text"
			t.Variables[name] = v
		case "text", "url", "code":
		default:
			return nil, fmt.Errorf("variable %s: unknown kind %q", name, v.Kind)
		}
	}
	t.variableNames = slices.Sorted(maps.Keys(t.Variables))
	var err error
	if t.Priority, err = domain.ParsePriority(f.Priority); err != nil {
		return nil, err
	}
	if len(f.Channels) == 0 {
		return nil, errors.New("at least one channel is required")
	}
	for _, s := range f.Channels {
		ch, err := domain.ParseChannel(s)
		if err != nil {
			return nil, err
		}
		t.Channels = append(t.Channels, ch)
	}
	if f.Expiry != "" {
		if t.DefaultExpiry, err = time.ParseDuration(f.Expiry); err != nil || t.DefaultExpiry <= 0 {
			return nil, fmt.Errorf("expiry %q: must be a positive duration", f.Expiry)
		}
	}
	if err := t.parseEscalation(f.Escalation); err != nil {
		return nil, err
	}
	if err := t.parseBudget(f.Budget); err != nil {
		return nil, err
	}
	if _, ok := f.Templates[DefaultLocale]; !ok {
		return nil, fmt.Errorf("templates for the default locale %q are required", DefaultLocale)
	}
	for locale, lt := range f.Templates {
		parsed, err := t.parseLocale(lt)
		if err != nil {
			return nil, fmt.Errorf("locale %s: %w", locale, err)
		}
		t.locales[locale] = parsed
	}
	if err := t.checkDigest(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Type) parseLocale(f fileLocaleTmpl) (*localeTemplates, error) {
	lt := &localeTemplates{label: strings.TrimSpace(f.Label)}
	if len(lt.label) > maxLabelLength {
		return nil, fmt.Errorf("label is longer than %d bytes", maxLabelLength)
	}
	var err error
	for _, ch := range t.Channels {
		switch ch {
		case domain.ChannelEmail:
			if f.Email == nil {
				return nil, errors.New("email template missing")
			}
		case domain.ChannelSMS:
			if f.SMS == nil {
				return nil, errors.New("sms template missing")
			}
		case domain.ChannelPush:
			if f.Push == nil {
				return nil, errors.New("push template missing")
			}
		}
	}
	if f.InApp == nil {
		return nil, errors.New("inapp template missing")
	}
	if f.Email != nil {
		e := &emailTemplates{}
		if e.subject, err = t.text("email.subject", f.Email.Subject); err != nil {
			return nil, err
		}
		if e.text, err = t.text("email.text", f.Email.Text); err != nil {
			return nil, err
		}
		e.html, err = parseHTML("email.html", f.Email.HTML)
		if err != nil {
			return nil, fmt.Errorf("email.html: %w", err)
		}
		if err := t.checkFields("email.html", e.html.tree); err != nil {
			return nil, err
		}
		lt.email = e
	}
	if f.SMS != nil {
		if lt.sms, err = t.text("sms.text", f.SMS.Text); err != nil {
			return nil, err
		}
	}
	if lt.push, err = t.link("push", f.Push); err != nil {
		return nil, err
	}
	if lt.inapp, err = t.link("inapp", f.InApp); err != nil {
		return nil, err
	}
	if lt.digest, err = t.parseDigest(f.Digest); err != nil {
		return nil, err
	}
	return lt, nil
}

func (t *Type) link(name string, f *fileLink) (*linkTemplates, error) {
	if f == nil {
		return nil, nil
	}
	l := &linkTemplates{}
	var err error
	if l.title, err = t.text(name+".title", f.Title); err != nil {
		return nil, err
	}
	if l.body, err = t.text(name+".body", f.Body); err != nil {
		return nil, err
	}
	if strings.TrimSpace(f.URL) != "" { // a link is optional
		if l.url, err = t.text(name+".url", f.URL); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (t *Type) text(name, src string) (*tmpl, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("%s is empty", name)
	}
	tm, err := parseText(name, src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := t.checkFields(name, tm.tree); err != nil {
		return nil, err
	}
	return tm, nil
}

// checkFields rejects templates that reference variables the type does not
// declare, so a typo fails the catalog load instead of a send.
func (t *Type) checkFields(name string, tree *parse.Tree) error {
	for _, f := range FieldsOf(tree) {
		if _, ok := t.Variables[f]; !ok {
			return fmt.Errorf("%s uses undeclared variable %q", name, f)
		}
	}
	return nil
}

// FieldsOf lists the top-level data fields ({{.name}}) a template references.
func FieldsOf(tree *parse.Tree) []string {
	seen := map[string]bool{}
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			seen[n.Ident[0]] = true
		case *parse.ChainNode:
			walk(n.Node)
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		}
	}
	if tree != nil {
		walk(tree.Root)
	}
	return slices.Sorted(maps.Keys(seen))
}
