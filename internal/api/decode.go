package api

import (
	"bytes"
	"net/http"
	"strconv"
)

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
