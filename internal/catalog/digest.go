package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/domain"
)

// MaxDigestItems bounds the notifications a digest message lists; the rest
// are counted (.more).
const MaxDigestItems = 10

// DigestData is what a digest template sees:
//
//	.count  how many notifications the digest collapses (its leader included)
//	.items  the newest of them, newest first, at most MaxDigestItems; each item
//	        is that notification's data (the type's declared variables)
//	.more   .count minus the number of items
type DigestData struct {
	Count int
	Items []map[string]any
}

func (d DigestData) templateData() map[string]any {
	items := d.Items
	if items == nil {
		items = []map[string]any{}
	}
	return map[string]any{"count": d.Count, "items": items, "more": max(d.Count-len(items), 0)}
}

// digestTemplates are a locale's `digest:` section: one template per channel
// of a digestible type.
type digestTemplates struct {
	email *emailTemplates
	sms   *tmpl
	push  *linkTemplates
}

// fileDigest is the YAML shape of a locale's `digest:` section.
type fileDigest struct {
	Email *fileEmail `yaml:"email"`
	SMS   *fileSMS   `yaml:"sms"`
	Push  *fileLink  `yaml:"push"`
}

// parseDigest parses a locale's digest section (nil when absent). Digest
// templates reference .count, .items and .more rather than the type's
// variables, so instead of the field check they are executed once on sample
// data at load: a typo fails the catalog, never a send.
func (t *Type) parseDigest(f *fileDigest) (*digestTemplates, error) {
	if f == nil {
		return nil, nil
	}
	if !t.Digestible {
		return nil, errors.New("digest templates on a type that is not digestible")
	}
	dt := &digestTemplates{}
	for _, ch := range t.Channels {
		missing := ch == domain.ChannelEmail && f.Email == nil || ch == domain.ChannelSMS && f.SMS == nil || ch == domain.ChannelPush && f.Push == nil
		if missing {
			return nil, fmt.Errorf("digest.%s template missing", ch)
		}
	}
	var err error
	if f.Email != nil {
		e := &emailTemplates{}
		if e.subject, err = digestText("digest.email.subject", f.Email.Subject); err != nil {
			return nil, err
		}
		if e.text, err = digestText("digest.email.text", f.Email.Text); err != nil {
			return nil, err
		}
		if e.html, err = parseHTML("digest.email.html", f.Email.HTML); err != nil {
			return nil, fmt.Errorf("digest.email.html: %w", err)
		}
		dt.email = e
	}
	if f.SMS != nil {
		if dt.sms, err = digestText("digest.sms.text", f.SMS.Text); err != nil {
			return nil, err
		}
	}
	if f.Push != nil {
		p := &linkTemplates{}
		if p.title, err = digestText("digest.push.title", f.Push.Title); err != nil {
			return nil, err
		}
		if p.body, err = digestText("digest.push.body", f.Push.Body); err != nil {
			return nil, err
		}
		if strings.TrimSpace(f.Push.URL) != "" {
			if p.url, err = digestText("digest.push.url", f.Push.URL); err != nil {
				return nil, err
			}
		}
		dt.push = p
	}
	if err := t.checkDigestPersonal(dt); err != nil {
		return nil, err
	}
	return dt, nil
}

// renderDigestSamples executes every locale's digest templates once on
// sample data (see parseDigest).
func (t *Type) renderDigestSamples() error {
	sample := DigestData{Count: 3, Items: []map[string]any{t.sampleData(), t.sampleData()}}
	for _, locale := range slices.Sorted(maps.Keys(t.locales)) {
		dt := t.locales[locale].digest
		if dt == nil {
			continue
		}
		for _, ch := range t.Channels {
			if _, err := dt.render(t.Name, KindOf(ch), sample); err != nil {
				return fmt.Errorf("locale %s: digest.%s on sample data: %w", locale, ch, err)
			}
		}
	}
	return nil
}

// checkDigest requires a digest section in the default locale of every
// digestible type; other locales fall back to it.
func (t *Type) checkDigest() error {
	if t.Digestible && t.locales[DefaultLocale].digest == nil {
		return fmt.Errorf("digestible type needs digest templates in the default locale %q", DefaultLocale)
	}
	return nil
}

// checkDigestPersonal keeps personal variables out of digest SMS and push
// text, which end up on lock screens and in provider logs (as for the
// per-notification templates).
func (t *Type) checkDigestPersonal(dt *digestTemplates) error {
	var named []*tmpl
	if dt.sms != nil {
		named = append(named, dt.sms)
	}
	if dt.push != nil {
		named = append(named, dt.push.title, dt.push.body)
		if dt.push.url != nil {
			named = append(named, dt.push.url)
		}
	}
	for _, tmpl := range named {
		for _, f := range FieldsOf(tmpl.tree) {
			if v, ok := t.Variables[f]; ok && v.Personal {
				return fmt.Errorf("%s uses personal variable %q", tmpl.Name(), f)
			}
		}
	}
	return nil
}

func digestText(name, src string) (*tmpl, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("%s is empty", name)
	}
	tm, err := parseText(name, src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return tm, nil
}

// sampleData is a valid value for every declared variable.
func (t *Type) sampleData() map[string]any {
	out := make(map[string]any, len(t.Variables))
	for name, v := range t.Variables {
		switch v.Kind {
		case "url":
			out[name] = "https://example.com/sample"
		case "code":
			out[name] = "000000"
		default:
			out[name] = "sample"
		}
	}
	return out
}

// RenderDigest renders the digest message of a kind in the best locale for
// `locale` (falling back to the default locale's digest section).
func (t *Type) RenderDigest(kind Kind, locale string, d DigestData) (Content, error) {
	dt := t.locales[t.ResolveLocale(locale)].digest
	if dt == nil {
		dt = t.locales[DefaultLocale].digest
	}
	if dt == nil {
		return Content{}, fmt.Errorf("render %s digest: %w", t.Name, ErrNoTemplate)
	}
	items := make([]map[string]any, len(d.Items))
	for i, it := range d.Items {
		items[i] = t.allowedLinks(it)
	}
	d.Items = items
	return dt.render(t.Name, kind, d)
}

func (dt *digestTemplates) render(typeName string, kind Kind, d DigestData) (Content, error) {
	data := d.templateData()
	var c Content
	var err error
	switch {
	case kind == KindEmail && dt.email != nil:
		c.Subject, err = executeString(dt.email.subject, data)
		if err == nil {
			c.Text, err = executeString(dt.email.text, data)
		}
		if err == nil {
			var b bytes.Buffer
			err = dt.email.html.execute(&b, data)
			c.HTML = b.String()
		}
	case kind == KindSMS && dt.sms != nil:
		c.Text, err = executeString(dt.sms, data)
	case kind == KindPush && dt.push != nil:
		c.Title, err = executeString(dt.push.title, data)
		if err == nil {
			c.Body, err = executeString(dt.push.body, data)
		}
		if err == nil {
			c.URL, err = executeString(dt.push.url, data)
		}
	default:
		return c, fmt.Errorf("render %s %s digest: %w", typeName, kind, ErrNoTemplate)
	}
	if err != nil {
		return Content{}, fmt.Errorf("render %s %s digest: %w", typeName, kind, err)
	}
	return c, nil
}
