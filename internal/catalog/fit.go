package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// PushPayload is the JSON a service worker receives for one push: the
// notification id (to deduplicate and to open the item), a title, and the
// optional body and link.
type PushPayload struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
	URL   string `json:"url,omitempty"`
}

// Encode marshals p without HTML escaping (which would inflate '<', '>' and
// '&' sixfold against the size limit).
func (p PushPayload) Encode() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p) // strings only: cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Ellipsis ends a shortened text.
const Ellipsis = "…"

// minBody is how much of a body is worth keeping before the link gives way.
const minBody = 64

// ErrCannotFit is returned when even the id and an empty title exceed the
// limit, which only a limit smaller than any real push service's can cause.
var ErrCannotFit = errors.New("push payload cannot fit")

// FitPush returns p's encoding in at most limit bytes, giving up as little as
// it must, in this order: shorten the body (to no less than 64 characters),
// then drop the link (the service worker opens the app instead) and shorten
// the body again, then shorten the title, then drop the body. The id is never
// changed. It reports whether anything was shortened or dropped.
func FitPush(p PushPayload, limit int) ([]byte, bool, error) {
	q, cut, err := FitPushAs(p, limit, PushPayload.Encode)
	if err != nil {
		return nil, cut, err
	}
	return q.Encode(), cut, nil
}

// FitPushAs is FitPush for another encoding of the payload (a native push
// platform's, whose limit counts its own JSON): it returns the payload whose
// encode(p) fits in limit bytes, shortened in FitPush's order.
func FitPushAs(p PushPayload, limit int, encode func(PushPayload) []byte) (PushPayload, bool, error) {
	if len(encode(p)) <= limit {
		return p, false, nil
	}
	// 1. The body gives way, keeping at least minBody characters.
	if q, ok := shortenToFit(p, limit, bodyField, minBody, encode); ok {
		return q, true, nil
	}
	// 2. Without the link (optional), the body gives way again.
	p.URL = ""
	if len(encode(p)) <= limit {
		return p, true, nil
	}
	if q, ok := shortenToFit(p, limit, bodyField, minBody, encode); ok {
		return q, true, nil
	}
	// 3. Title, then nothing but the id and what is left of the title.
	p.Body = truncateRunes(p.Body, minBody)
	if q, ok := shortenToFit(p, limit, titleField, 1, encode); ok {
		return q, true, nil
	}
	p.Body = ""
	if q, ok := shortenToFit(p, limit, titleField, 0, encode); ok {
		return q, true, nil
	}
	return p, true, fmt.Errorf("%w in %d bytes (id of %d bytes)", ErrCannotFit, limit, len(p.ID))
}

type payloadField int

const (
	bodyField payloadField = iota
	titleField
)

// shortenToFit finds the longest prefix (in runes, at least keep) of field
// that, with an ellipsis, makes p fit; ok is false when even keep runes do not.
func shortenToFit(p PushPayload, limit int, field payloadField, keep int, encode func(PushPayload) []byte) (PushPayload, bool) {
	text := p.Body
	if field == titleField {
		text = p.Title
	}
	with := func(n int) PushPayload {
		q := p
		s := truncateRunes(text, n)
		if field == titleField {
			q.Title = s
		} else {
			q.Body = s
		}
		return q
	}
	total := utf8.RuneCountInString(text)
	keep = min(keep, total)
	if len(encode(with(keep))) > limit {
		return p, false
	}
	lo, hi := keep, total // invariant: with(lo) fits
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(encode(with(mid))) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return with(lo), true
}

// truncateRunes keeps the first n runes of s and adds an ellipsis when it cut
// anything; it never splits a character.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + Ellipsis
}

// RenderDigestWithin renders a digest that fits: while fits rejects the
// content, it lists one item fewer (the oldest listed goes, counted in
// .more), down to one item, or none when the templates can do without. The
// last rendering is returned even if it still does not fit: the caller fits
// the single message (FitPush), a digest is never dropped for its size.
func (t *Type) RenderDigestWithin(kind Kind, locale string, d DigestData, fits func(Content) bool) (Content, error) {
	c, err := t.RenderDigest(kind, locale, d)
	if err != nil || fits == nil {
		return c, err
	}
	for n := len(d.Items) - 1; !fits(c) && n >= 0; n-- {
		fewer := DigestData{Count: d.Count, Items: d.Items[:n]}
		next, err := t.RenderDigest(kind, locale, fewer)
		if err != nil {
			break // a template that needs an item (e.g. the first item's link)
		}
		c = next
	}
	return c, nil
}
