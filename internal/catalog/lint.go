package catalog

import (
	"fmt"
	"sort"
	"strings"
)

// Lint checks the rules a catalog must keep beyond parsing (the shipped
// catalog is linted by the package tests):
//   - no SMS or push template references a variable marked personal: those
//     texts end up on lock screens and in provider logs;
//   - every SMS template fits one segment with worst-case data (see the SMS
//     segment budget in sms.go), a digest SMS with one worst-case item;
//   - a mandatory or high-priority type's only external channel is not
//     conditional on presence or read state (escalation).
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
		if lt.push != nil {
			for field, tmpl := range map[string]*tmpl{"title": lt.push.title, "body": lt.push.body, "url": lt.push.url} {
				errs = append(errs, t.lintPersonal(where("push."+field), tmpl)...)
			}
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
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
