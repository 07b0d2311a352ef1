package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Strict JSON decoding of request bodies, in one place: reading the body
// (base64, size limit), decoding it with github.com/go-json-experiment/json
// (the json/v2 prototype) and the mapping of its errors to problems.

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

// decodeStrict decodes one JSON object into v: valid UTF-8, valid JSON,
// member names exactly as v's json tags spell them (case-sensitive, each
// once in every object, free-form objects included), no unknown member,
// values of the right types and no null where an array is required. A
// refusal names the offending member with its JSON pointer.
func decodeStrict(body []byte, v any) *Problem {
	trimmed, p := jsonObject(body)
	if p != nil {
		return p
	}
	if err := jsonv2.Unmarshal(trimmed, v, strictOptions); err != nil {
		return strictProblem(err)
	}
	return nil
}

// strictOptions are json/v2's defaults (names matched case-sensitively,
// duplicate names refused in every object) with unknown members refused and
// null refused for a list of strings: every []string of a request body
// (channels, userIds) is "an array of at least one", where null is not
// "absent".
var strictOptions = jsonv2.JoinOptions(
	jsonv2.RejectUnknownMembers(true),
	// Raw invalid UTF-8 is refused before (jsonObject); this only lets an
	// escaped lone surrogate ("\ud800") decode to U+FFFD, as encoding/json
	// and the decoder before this one did.
	jsontext.AllowInvalidUTF8(true),
	jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, _ *[]string) error {
		if dec.PeekKind() == 'n' {
			return errNullArray
		}
		return jsonv2.SkipFunc
	})),
)

var errNullArray = errors.New("null where an array is required")

// strictProblem turns a json/v2 error into a 400 with the member's pointer.
func strictProblem(err error) *Problem {
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		ptr := string(syn.JSONPointer)
		return fieldProblem(http.StatusBadRequest, "duplicate_field", ptr, fmt.Sprintf("field %q appears more than once", syn.JSONPointer.LastToken()))
	case errors.As(err, &sem) && errors.Is(sem.Err, jsonv2.ErrUnknownName):
		ptr := string(sem.JSONPointer)
		return fieldProblem(http.StatusBadRequest, "unknown_field", ptr, fmt.Sprintf("unknown field %q", sem.JSONPointer.LastToken()))
	case errors.As(err, &sem) && sem.GoType == reflect.TypeFor[time.Time]():
		return fieldProblem(http.StatusBadRequest, "invalid_time", string(sem.JSONPointer), "times must be RFC 3339, like 2026-12-01T10:00:00Z")
	case errors.As(err, &sem) && sem.JSONPointer != "":
		ptr, want := string(sem.JSONPointer), "an array"
		if !errors.Is(sem.Err, errNullArray) && sem.GoType != nil {
			want = jsonTypeName(sem.GoType)
		}
		return fieldProblem(http.StatusBadRequest, "invalid_type", ptr, ptr[1:]+" must be "+want)
	case errors.As(err, &sem):
		return &Problem{Status: http.StatusBadRequest, Code: "invalid_json", Detail: "body must be a JSON object"}
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

// decodeNotificationRequest decodes the body of POST /v1/notifications (or,
// with itemKey, one batch item and its idempotencyKey) with decodeStrict.
// data stays raw (as sent, so that its size is measured as sent) for
// decodeData.
func decodeNotificationRequest(body []byte, nr *notificationRequest, itemKey *string) *Problem {
	var p *Problem
	if itemKey == nil {
		p = decodeStrict(body, nr)
	} else {
		it := batchItem{notificationRequest: *nr}
		if p = decodeStrict(body, &it); p == nil {
			*nr, *itemKey = it.notificationRequest, it.IdempotencyKey
		}
	}
	if p == nil && bytes.Equal(nr.Data, []byte("null")) {
		nr.Data = nil // "data": null is no data
	}
	return p
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
