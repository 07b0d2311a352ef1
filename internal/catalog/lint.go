package catalog

import (
	"fmt"
	"sort"
	"strings"
	"text/template/parse"
)

// Lint checks the rules a catalog must keep beyond parsing (the shipped
// catalog is linted by the package tests):
//   - no SMS or push template references a variable marked personal: those
//     texts end up on lock screens and in provider logs;
//   - every SMS template fits one segment with worst-case data (see the SMS
//     segment budget in sms.go), a digest SMS with one worst-case item;
//   - a mandatory or high-priority type's only external channel is not
//     conditional on presence or read state (escalation);
//   - no in-app text names a channel ("sent to your phone", "check your
//     email"): the inbox item is rendered when the notification is
//     accepted, before any channel's outcome is known, and that channel may
//     end skipped (no contact, preference, quiet hours) or failed.
//
// It returns every violation, sorted, or nil.
func (c *Catalog) Lint() []error {
	var errs []error
	for _, name := range c.Names() {
		errs = append(errs, c.types[name].Lint()...)
	}
	return errs
}

// Lint checks one type; see Catalog.Lint.
func (t *Type) Lint() []error {
	errs := t.lintEscalation()
	worst := t.WorstCaseData()
	for _, locale := range t.Locales() {
		lt := t.locales[locale]
		where := func(kind string) string { return fmt.Sprintf("%s %s %s", t.Name, locale, kind) }
		if lt.sms != nil {
			errs = append(errs, t.lintPersonal(where("sms.text"), lt.sms)...)
			text, err := executeString(lt.sms, worst)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: render with worst-case data: %w", where("sms.text"), err))
			} else if fits, enc, n := SMSFitsOneSegment(text); !fits {
				limit := SMSSegmentGSM7
				if enc == EncodingUCS2 {
					limit = SMSSegmentUCS2
				}
				errs = append(errs, fmt.Errorf("%s: %d %s units with worst-case data, one segment holds %d (lower the variables' maxLength or shorten the text)",
					where("sms.text"), n, enc, limit))
			}
		}
		if lt.digest != nil && lt.digest.sms != nil {
			errs = append(errs, t.lintDigestSMS(where("digest.sms.text"), lt.digest)...)
		}
		if lt.inapp != nil {
			for field, tm := range map[string]*tmpl{"title": lt.inapp.title, "body": lt.inapp.body} {
				if word := channelWord(locale, tm); word != "" {
					errs = append(errs, fmt.Errorf("%s: names a channel (%q): an in-app text cannot know that channel's outcome; say what happened, not where it was sent", where("inapp."+field), word))
				}
			}
		}
		if lt.push != nil {
			for field, tmpl := range map[string]*tmpl{"title": lt.push.title, "body": lt.push.body, "url": lt.push.url} {
				errs = append(errs, t.lintPersonal(where("push."+field), tmpl)...)
			}
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// channelWords are words that name a delivery channel, per locale (the
// base language), lower case.
var channelWords = map[string][]string{
	"en": {"e-mail", "email", "mail", "sms", "text message", "texted", "phone", "push"},
	"ja": {"メール", "sms", "ショートメッセージ", "電話", "携帯", "プッシュ"},
}

// channelWord returns the first channel word in tm's literal text (not its
// variables), or "".
func channelWord(locale string, tm *tmpl) string {
	if tm == nil {
		return ""
	}
	base, _, _ := strings.Cut(locale, "-")
	text := strings.ToLower(literalText(tm))
	for _, w := range channelWords[base] {
		if containsWord(text, w) {
			return w
		}
	}
	return ""
}

// literalText is a template's literal text (its text nodes, each followed by
// a space where an action stood), without its {{…}} actions.
func literalText(tm *tmpl) string {
	var b strings.Builder
	walkNodes(tm.tree.Root, func(n parse.Node) bool {
		if t, ok := n.(*parse.TextNode); ok {
			b.Write(t.Text)
			b.WriteString(" ")
		}
		return false
	})
	return b.String()
}

// containsWord reports whether w occurs in text not inside a longer ASCII
// word ("mail" not in "mailbox", "push" not in "pushed"); non-ASCII words
// match anywhere (Japanese has no spaces).
func containsWord(text, w string) bool {
	isLetter := func(b byte) bool { return b >= 'a' && b <= 'z' }
	for from := 0; ; {
		i := strings.Index(text[from:], w)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(w)
		if w[0] >= 0x80 || ((i == 0 || !isLetter(text[i-1])) && (end == len(text) || !isLetter(text[end]))) {
			return true
		}
		from = i + 1
	}
}

// lintDigestSMS checks that a digest SMS fits one segment in its smallest
// form: one worst-case item and a large count. The worker lists fewer items
// (counting the rest) until a digest fits, so that form is the one that must.
func (t *Type) lintDigestSMS(where string, dt *digestTemplates) []error {
	c, err := dt.render(t.Name, KindSMS, DigestData{Count: 999_999, Items: []map[string]any{t.WorstCaseData()}})
	if err != nil {
		return []error{fmt.Errorf("%s: render with one worst-case item: %w", where, err)}
	}
	if fits, enc, n := SMSFitsOneSegment(c.Text); !fits {
		limit := SMSSegmentGSM7
		if enc == EncodingUCS2 {
			limit = SMSSegmentUCS2
		}
		return []error{fmt.Errorf("%s: %d %s units with one worst-case item, one segment holds %d (lower the variables' maxLength or shorten the text)", where, n, enc, limit)}
	}
	return nil
}

func (t *Type) lintPersonal(where string, tm *tmpl) []error {
	if tm == nil {
		return nil
	}
	var errs []error
	for _, f := range FieldsOf(tm.tree) {
		if t.Variables[f].Personal {
			errs = append(errs, fmt.Errorf("%s: uses personal variable %q (not allowed in SMS or push)", where, f))
		}
	}
	return errs
}

// WorstCaseData returns data for the type that costs the most SMS units any
// valid data can: each variable at its maximum length, made of its kind's
// most expensive characters (see the SMS segment budget in sms.go). It
// passes ValidateData (for url limits of at least 18 characters).
func (t *Type) WorstCaseData() map[string]any {
	out := make(map[string]any, len(t.Variables))
	for name, v := range t.Variables {
		n := v.maxLength()
		switch v.Kind {
		case "url":
			const prefix = "https://x.example/"
			if n < len(prefix) {
				out[name] = prefix // shorter limits reject every URL anyway
				continue
			}
			out[name] = prefix + strings.Repeat("~", n-len(prefix))
		case "code":
			out[name] = strings.Repeat("W", n)
		default:
			out[name] = strings.Repeat("😀", n)
		}
	}
	return out
}
