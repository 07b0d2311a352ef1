package client

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"
)

// Error is an error answer from Herald: an RFC 9457 problem document, or an
// API Gateway error (no Code; for example a 403 when the request's signature
// or IAM permission is wrong). Match it with errors.As.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is Herald's stable machine code (e.g. "missing_variable");
	// empty for answers that are not problem documents.
	Code string
	// Pointer is the JSON Pointer (RFC 6901) of the offending request
	// member; Header and Parameter name an offending header or path/query
	// parameter.
	Pointer   string
	Header    string
	Parameter string
	Type      string
	Title     string
	Detail    string
	// RequestID is API Gateway's request id, for support.
	RequestID string
	// Attempts is how many times the request was sent.
	Attempts int
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("herald: ")
	b.WriteString(http.StatusText(e.Status))
	if e.Code != "" {
		b.WriteString(" (" + e.Code + ")")
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	} else if e.Title != "" && e.Title != http.StatusText(e.Status) {
		b.WriteString(": " + e.Title)
	}
	if e.Pointer != "" {
		b.WriteString(" at " + e.Pointer)
	}
	return b.String()
}

// Sentinels matched by errors.Is against an *Error's status.
var (
	ErrNotFound     = errors.New("herald: not found")
	ErrConflict     = errors.New("herald: conflict")
	ErrUnauthorized = errors.New("herald: unauthenticated or forbidden")
	ErrThrottled    = errors.New("herald: throttled")
)

// Is lets errors.Is(err, client.ErrNotFound) and the others match by status.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusConflict
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case ErrThrottled:
		return e.Status == http.StatusTooManyRequests
	}
	return false
}

// problem is the wire form of a problem document (and of a batch item's).
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Code      string `json:"code"`
	Pointer   string `json:"pointer"`
	Header    string `json:"header"`
	Parameter string `json:"parameter"`
}

func (p *problem) err(status int) *Error {
	if p.Status != 0 {
		status = p.Status
	}
	return &Error{Status: status, Code: p.Code, Pointer: p.Pointer, Header: p.Header, Parameter: p.Parameter,
		Type: p.Type, Title: p.Title, Detail: p.Detail}
}

// errorFrom reads an error answer: a problem document, API Gateway's
// {"message": ...}, or anything else as text.
func errorFrom(status int, h http.Header, raw []byte) *Error {
	e := &Error{Status: status, RequestID: h.Get("Apigw-Requestid")}
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if mt == "application/problem+json" {
		var p problem
		if json.Unmarshal(raw, &p) == nil {
			pe := p.err(status)
			pe.Status, pe.RequestID = status, e.RequestID
			return pe
		}
	}
	var gw struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &gw) == nil && gw.Message != "" {
		e.Title = gw.Message
		return e
	}
	if len(raw) > 0 && len(raw) < 512 {
		e.Detail = strings.TrimSpace(string(raw))
	}
	return e
}
