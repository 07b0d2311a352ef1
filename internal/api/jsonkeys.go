package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
)

// schema lists the object keys a request body may contain. encoding/json
// matches keys case-insensitively, lets a repeated key win silently and names
// an unknown key without its path; checkKeys closes those gaps before the
// body is decoded, with the JSON pointer of the offending key.
type schema struct {
	// fields are the keys of an object, exactly as spelled; nil allows any
	// key (a free-form object such as data), whose values follow anyKey.
	fields map[string]*schema
	anyKey *schema
}

var (
	recipientSchema    = &schema{fields: map[string]*schema{"userId": nil, "email": nil, "phone": nil, "locale": nil}}
	notificationFields = map[string]*schema{
		"type": nil, "recipient": recipientSchema, "data": {}, "priority": nil, "channels": nil,
		"resourceId": nil, "batchKey": nil, "sendAt": nil, "expiresAt": nil,
	}
	notificationSchema = &schema{fields: notificationFields}
	batchItemSchema    = &schema{fields: withField(notificationFields, "idempotencyKey")}
	// Batch items are checked one by one (decodeBatchItem), so that a bad
	// item fails alone.
	batchSchema = &schema{fields: map[string]*schema{"notifications": nil}}
	userSchema  = &schema{fields: map[string]*schema{
		"email": nil, "phone": nil, "locale": nil, "timezone": nil,
		"quietHours": {fields: map[string]*schema{"start": nil, "end": nil}}, "digestMinutes": nil,
	}}
	subscriptionSchema = &schema{fields: map[string]*schema{
		"endpoint": nil, "expirationTime": nil, "keys": {fields: map[string]*schema{"p256dh": nil, "auth": nil}},
	}}
	preferencesSchema = &schema{fields: map[string]*schema{"preferences": {anyKey: &schema{}}}}
)

func withField(m map[string]*schema, name string) map[string]*schema {
	out := maps.Clone(m)
	out[name] = nil
	return out
}

// checkKeys walks a syntactically valid JSON document and reports the first
// key that s does not allow (unknown_field) or that repeats within its object
// (duplicate_field). It allocates only on the error path and for keys
// written with escapes.
func checkKeys(doc []byte, s *schema) *Problem {
	w := keyWalker{b: doc}
	w.ws()
	return w.value(s)
}

// maxTrackedDepth bounds the path kept for pointers; request schemas are
// three levels deep, and deeper keys are still checked.
const maxTrackedDepth = 16

type keyWalker struct {
	b     []byte
	i     int
	depth int
	// path[:depth] is where the walk is, kept in place (no allocation on the
	// happy path); only an error turns it into a JSON pointer.
	path [maxTrackedDepth]pathStep
}

type pathStep struct {
	key   []byte // object key, or nil for an array index
	index int
}

func (w *keyWalker) push(step pathStep) {
	if w.depth < maxTrackedDepth {
		w.path[w.depth] = step
	}
	w.depth++
}

func (w *keyWalker) pop() { w.depth-- }

func (w *keyWalker) pointer() string {
	var b strings.Builder
	for _, st := range w.path[:min(w.depth, maxTrackedDepth)] {
		b.WriteByte('/')
		if st.key == nil {
			b.WriteString(strconv.Itoa(st.index))
		} else {
			b.WriteString(escapePointer(string(st.key)))
		}
	}
	return b.String()
}

func (w *keyWalker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *keyWalker) value(s *schema) *Problem {
	if w.i >= len(w.b) {
		return nil
	}
	switch w.b[w.i] {
	case '{':
		return w.object(s)
	case '[':
		return w.array()
	case '"':
		w.str()
	default: // number, true, false, null
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return nil
			}
			w.i++
		}
	}
	return nil
}

// str consumes a string and returns its raw content (without quotes) and
// whether it contains escapes.
func (w *keyWalker) str() (raw []byte, escaped bool) {
	w.i++ // opening quote
	start := w.i
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case '\\':
			escaped = true
			w.i += 2
			continue
		case '"':
			raw = w.b[start:w.i]
			w.i++
			return raw, escaped
		}
		w.i++
	}
	return w.b[start:], escaped
}

func (w *keyWalker) object(s *schema) *Problem {
	w.i++ // {
	var seenBuf [16][]byte
	seen := seenBuf[:0]
	var seenMap map[string]bool
	for {
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] == '}' {
			w.i++
			return nil
		}
		if w.b[w.i] == ',' {
			w.i++
			continue
		}
		start := w.i
		key, escaped := w.str()
		if escaped {
			var k string
			_ = json.Unmarshal(w.b[start:w.i], &k)
			key = []byte(k)
		}
		w.push(pathStep{key: key})
		if seenMap != nil {
			if seenMap[string(key)] {
				return w.duplicateField(key)
			}
			seenMap[string(key)] = true
		} else {
			for _, k := range seen {
				if bytes.Equal(k, key) {
					return w.duplicateField(key)
				}
			}
			if len(seen) == cap(seen) {
				seenMap = make(map[string]bool, 2*len(seen))
				for _, k := range seen {
					seenMap[string(k)] = true
				}
				seenMap[string(key)] = true
			} else {
				seen = append(seen, key)
			}
		}
		var child *schema
		if s != nil {
			if s.fields != nil {
				var ok bool
				if child, ok = s.fields[string(key)]; !ok {
					return fieldProblem(http.StatusBadRequest, "unknown_field", w.pointer(), fmt.Sprintf("unknown field %q", key))
				}
			} else {
				child = s.anyKey
			}
		}
		w.ws()
		w.i++ // :
		w.ws()
		if p := w.value(child); p != nil {
			return p
		}
		w.pop()
	}
}

// array walks the elements; objects inside arrays are checked for repeated
// keys only (no request schema puts objects in arrays).
func (w *keyWalker) array() *Problem {
	w.i++ // [
	for n := 0; ; {
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] == ']' {
			w.i++
			return nil
		}
		if w.b[w.i] == ',' {
			w.i++
			n++
			continue
		}
		w.push(pathStep{index: n})
		if p := w.value(nil); p != nil {
			return p
		}
		w.pop()
	}
}

func (w *keyWalker) duplicateField(key []byte) *Problem {
	return fieldProblem(http.StatusBadRequest, "duplicate_field", w.pointer(), fmt.Sprintf("field %q appears more than once", key))
}
