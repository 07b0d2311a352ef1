package api

import "net/http"

// Problem is an RFC 9457 problem document with a stable machine code.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
	// Pointer is the JSON pointer (RFC 6901) of the offending field.
	Pointer string `json:"pointer,omitempty"`
	// Header names the offending request header; Parameter the offending path
	// or query parameter.
	Header    string `json:"header,omitempty"`
	Parameter string `json:"parameter,omitempty"`
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// problemTypeBase prefixes problem type URIs; each code has its own URI.
const problemTypeBase = "https://herald.dev/problems/"

func problemResponse(p *Problem) response {
	if p.Type == "" {
		p.Type = problemTypeBase + p.Code
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	return response{status: p.Status, body: p}
}

func fieldProblem(status int, code, pointer, detail string) *Problem {
	return &Problem{Status: status, Code: code, Pointer: pointer, Detail: detail}
}
