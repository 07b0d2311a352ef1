package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Strict JSON decoding of request bodies, in one place: reading the body
// (base64, size limit), the key schemas and the keyWalker that checks them
// (unknown and duplicate keys, with JSON pointers), the reflection-free
// decoder of intake's hot path, and the mapping of decoding errors to
// problems.

// readBody returns the request body, decoded from base64 when API Gateway
// encoded it, or a 413 beyond 64 KiB.
func readBody(req *request) ([]byte, *Problem) { return readBodyLimit(req, maxBodyBytes, "64 KiB") }

// readBodyLimit is readBody with another limit.
func readBodyLimit(req *request, limit int, limitText string) ([]byte, *Problem) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		var err error
		if body, err = decodeBase64(req.Body); err != nil {
			return nil, &Problem{Status: http.StatusBadRequest, Code: "invalid_body", Detail: "body is not valid base64"}
		}
	}
	if len(body) > limit {
		return nil, &Problem{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Detail: "body exceeds " + limitText}
	}
	return body, nil
}

// jsonObject checks that body is one JSON object in valid UTF-8 and returns
// it without surrounding JSON whitespace.
func jsonObject(body []byte) ([]byte, *Problem) {
	trimmed := bytes.Trim(body, " \t\r\n") // JSON whitespace only
	switch {
	case len(trimmed) == 0:
		return nil, &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is empty"}
	case !utf8.Valid(trimmed):
		return nil, &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is not valid UTF-8"}
	case !json.Valid(trimmed):
		return nil, &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is not valid JSON"}
	case trimmed[0] != '{':
		return nil, &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body must be a JSON object"}
	}
	return trimmed, nil
}

// decodeStrict decodes one JSON object into v: valid UTF-8, valid JSON, keys
// exactly as s allows (each once, with the pointer of the first offender),
// values of the right types.
func decodeStrict(body []byte, s *schema, v any) *Problem {
	trimmed, p := jsonObject(body)
	if p != nil {
		return p
	}
	if p := checkKeys(trimmed, s); p != nil {
		return p
	}
	return decodeJSON(trimmed, v)
}

// decodeJSON decodes one JSON object into v with encoding/json, refusing
// unknown fields. decodeStrict is stricter (exact keys, no repeats, pointers
// for nested unknown fields) where a schema is declared.
func decodeJSON(body []byte, v any) *Problem {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	if dec.More() {
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body must be a single JSON object"}
	}
	return nil
}

// jsonProblem turns a decoding error into a 400 naming the field where
// possible.
func jsonProblem(err error) *Problem {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tim *time.ParseError
	switch {
	case errors.As(err, &syn):
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is not valid JSON"}
	case errors.As(err, &typ):
		if typ.Field == "" {
			return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body must be a JSON object"}
		}
		ptr := "/" + strings.ReplaceAll(typ.Field, ".", "/")
		return fieldProblem(http.StatusBadRequest, "invalid_type", ptr, fmt.Sprintf("%s must be %s", typ.Field, jsonTypeName(typ.Type)))
	case errors.As(err, &tim):
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_time", Detail: "times must be RFC 3339, like 2026-12-01T10:00:00Z"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return fieldProblem(http.StatusBadRequest, "unknown_field", "/"+escapePointer(name), fmt.Sprintf("unknown field %q", name))
	case errors.Is(err, io.EOF):
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is empty"}
	}
	return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is not valid JSON"}
}

// jsonTypeName names a Go type the way a JSON client thinks of it.
func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// schema lists the object keys a request body may contain. encoding/json
// matches keys case-insensitively, lets a repeated key win silently and names
// an unknown key without its path; checkKeys closes those gaps before the
// body is decoded, with the JSON pointer of the offending key.
type schema struct {
	// fields are the keys of an object, exactly as spelled; nil allows any
	// key (a free-form object such as data), whose values follow anyKey.
	fields map[string]*schema
	anyKey *schema
	// array: the value must be an array; null is not "absent" where the
	// schema says an array (of at least one).
	array bool
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
	if s != nil && s.array && w.b[w.i] != '[' {
		p := w.pointer()
		return w.typeProblem(p, "an array")
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

// decodeNotificationRequest decodes the body of POST /v1/notifications (or,
// with itemKey, one batch item and its idempotencyKey) without reflection:
// intake's hot path. It enforces what decodeStrict does — UTF-8, valid JSON,
// one object, known keys each once — and then reads the fields directly,
// reporting a value of the wrong type with its pointer. data is kept raw (a
// slice of body) for decodeData. Tests check it agrees with encoding/json.
func decodeNotificationRequest(body []byte, nr *notificationRequest, itemKey *string) *Problem {
	trimmed, p := jsonObject(body)
	if p != nil {
		return p
	}
	s := notificationSchema
	if itemKey != nil {
		s = batchItemSchema
	}
	if p := checkKeys(trimmed, s); p != nil {
		return p
	}
	// The document is valid JSON with known, unique keys: walk it once.
	w := keyWalker{b: trimmed}
	return w.members(func(key string) *Problem {
		switch key {
		case "type":
			return w.stringField(&nr.Type, "/type")
		case "priority":
			return w.stringField(&nr.Priority, "/priority")
		case "resourceId":
			return w.stringField(&nr.ResourceID, "/resourceId")
		case "batchKey":
			return w.stringField(&nr.BatchKey, "/batchKey")
		case "sendAt":
			return w.stringField(&nr.SendAt, "/sendAt")
		case "expiresAt":
			return w.stringField(&nr.ExpiresAt, "/expiresAt")
		case "idempotencyKey":
			return w.stringField(itemKey, "/idempotencyKey")
		case "data":
			start := w.i
			_ = w.value(nil)
			if raw := w.b[start:w.i]; !bytes.Equal(raw, []byte("null")) {
				nr.Data = raw
			}
			return nil
		case "channels":
			// null is not "absent": the schema says an array of at least one.
			if w.b[w.i] != '[' {
				return w.typeProblem("/channels", "an array of strings")
			}
			nr.Channels = make([]string, 0, 3)
			return w.elements(func(i int) *Problem {
				var c string
				if w.b[w.i] != '"' {
					return w.typeProblem("/channels/"+strconv.Itoa(i), "a string")
				}
				c, _ = w.decodedString()
				nr.Channels = append(nr.Channels, c)
				return nil
			})
		case "recipient":
			if w.null() {
				return nil
			}
			if w.b[w.i] != '{' {
				return w.typeProblem("/recipient", "an object")
			}
			r := &nr.Recipient
			return w.members(func(key string) *Problem {
				switch key {
				case "userId":
					return w.stringField(&r.UserID, "/recipient/userId")
				case "email":
					return w.stringField(&r.Email, "/recipient/email")
				case "phone":
					return w.stringField(&r.Phone, "/recipient/phone")
				default: // "locale": checkKeys admits nothing else
					return w.stringField(&r.Locale, "/recipient/locale")
				}
			})
		}
		return nil
	})
}

// members walks the object at the cursor, calling member with the cursor on
// each value; member must consume the value.
func (w *keyWalker) members(member func(key string) *Problem) *Problem {
	w.ws()
	w.i++ // {
	for {
		w.ws()
		switch w.b[w.i] {
		case '}':
			w.i++
			return nil
		case ',':
			w.i++
			continue
		}
		key, _ := w.decodedString() // checkKeys admitted only known names
		w.ws()
		w.i++ // :
		w.ws()
		if p := member(key); p != nil {
			return p
		}
	}
}

// elements walks the array at the cursor like members.
func (w *keyWalker) elements(element func(i int) *Problem) *Problem {
	w.i++ // [
	for n := 0; ; {
		w.ws()
		switch w.b[w.i] {
		case ']':
			w.i++
			return nil
		case ',':
			w.i++
			n++
			continue
		}
		if p := element(n); p != nil {
			return p
		}
	}
}

// null consumes a JSON null at the cursor, if there is one.
func (w *keyWalker) null() bool {
	if bytes.HasPrefix(w.b[w.i:], []byte("null")) {
		w.i += 4
		return true
	}
	return false
}

// stringField reads a string (or null, which leaves dst as it is, as
// encoding/json does) into dst.
func (w *keyWalker) stringField(dst *string, pointer string) *Problem {
	if w.null() {
		return nil
	}
	if w.b[w.i] != '"' {
		return w.typeProblem(pointer, "a string")
	}
	s, ok := w.decodedString()
	if !ok {
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body is not valid JSON"}
	}
	*dst = s
	return nil
}

func (w *keyWalker) typeProblem(pointer, want string) *Problem {
	return fieldProblem(http.StatusBadRequest, "invalid_type", pointer, pointer[1:]+" must be "+want)
}

// decodeStringObject decodes a valid JSON object whose values are all
// strings — the shape of template data — without reflection. It reports
// false for anything else.
func decodeStringObject(raw []byte) (map[string]any, bool) {
	w := keyWalker{b: raw}
	w.ws()
	if w.i >= len(raw) || raw[w.i] != '{' {
		return nil, false
	}
	w.i++
	out := make(map[string]any, 4)
	for {
		w.ws()
		if w.i >= len(raw) {
			return nil, false
		}
		switch raw[w.i] {
		case '}':
			return out, true
		case ',':
			w.i++
			continue
		}
		key, ok := w.decodedString()
		if !ok {
			return nil, false
		}
		w.ws()
		w.i++ // :
		w.ws()
		if w.i >= len(raw) || raw[w.i] != '"' {
			return nil, false
		}
		val, ok := w.decodedString()
		if !ok {
			return nil, false
		}
		out[key] = val
	}
}

// decodedString consumes a JSON string at the cursor and returns its value.
func (w *keyWalker) decodedString() (string, bool) {
	start := w.i
	raw, escaped := w.str()
	if !escaped {
		return string(raw), true
	}
	var s string
	if err := json.Unmarshal(w.b[start:w.i], &s); err != nil {
		return "", false
	}
	return s, true
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
