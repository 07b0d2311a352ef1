// Package smssink is a local stand-in for the parts of Amazon SNS that Herald
// uses: SMS (the Publish, CheckIfPhoneNumberIsOptedOut and OptInPhoneNumber
// actions) and mobile push (platform applications and endpoints, Publish to
// an endpoint: mobile.go), in the AWS query protocol (form-encoded POST, XML
// answers in the 2010-03-31 namespace), exact enough that the real AWS SDK
// for Go v2 SNS client talks to it through BaseEndpoint.
//
// Published messages are captured instead of delivered and listed as JSON for
// developers and tests. Faults can be injected to exercise the channel
// worker's retry and failure paths.
//
// Opted-out numbers: real SNS does not reject a Publish to a number that has
// opted out. The call succeeds with a MessageId and the message is dropped
// afterwards; only the SMS delivery-status log in CloudWatch shows a FAILURE
// whose providerResponse says the number is opted out. The sink does the
// same: the publish succeeds, and the message goes to the suppressed list
// (Suppressed, GET …?suppressed=true) instead of the delivered one. Sources:
//   - The SNS API model's error list for Publish, as generated into the SDKs
//     (e.g. rusoto_sns::PublishError: AuthorizationError, EndpointDisabled,
//     InternalError, InvalidParameter, InvalidParameterValue, InvalidSecurity,
//     KMS…, NotFound, PlatformApplicationDisabled), has no OptedOut error. The
//     model's OptedOutException (code "OptedOut", 400) is raised by the SMS
//     sandbox action CreateSMSSandboxPhoneNumber, not by Publish.
//   - cds-snc/notification-api PR #2207 (2024): "The Pinpoint boto call throws
//     an exception if we try to send to a phone number that has opted out.
//     (SNS will accept the boto call and later log that the number has opted
//     out)."
//   - GSA/notifications-admin issue #935: an SNS CloudWatch delivery log for an
//     opted-out number, status FAILURE, providerResponse "+1555… is opted out".
//   - SNS Developer Guide, "Managing phone numbers and SMS subscriptions":
//     after opting out "the recipient will no longer receive SMS messages …
//     unless you opt-in the phone number".
//
// So Herald cannot learn about opt-outs from Publish errors; it has to ask
// (CheckIfPhoneNumberIsOptedOut / ListPhoneNumbersOptedOut) or read the
// delivery-status logs.
package smssink

import (
	"crypto/rand"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// snsNamespace is the XML namespace of every SNS query-protocol answer.
const snsNamespace = "http://sns.amazonaws.com/doc/2010-03-31/"

// Limits SNS applies to an SMS publish.
const (
	// MaxSMSBytes is the SNS quota for one SMS publish ("The total size quota
	// for a single SMS publish action is 1,600 bytes"); SNS splits longer
	// texts into several SMS up to this size.
	MaxSMSBytes = 1600
	// maxRequestBytes bounds the form body (SNS's own message limit is 256 KiB).
	maxRequestBytes = 512 << 10
)

// Message attribute names SNS reads for SMS.
const (
	AttributeSMSType  = "AWS.SNS.SMS.SMSType"
	AttributeSenderID = "AWS.SNS.SMS.SenderID"
)

// ValidPhoneNumber reports whether number is in E.164 form: "+", a country
// code starting with 1-9, at most 15 digits in all (+15551234567).
func ValidPhoneNumber(number string) bool {
	digits, ok := strings.CutPrefix(number, "+")
	if !ok || len(digits) < 2 || len(digits) > 15 || digits[0] == '0' {
		return false
	}
	return !strings.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
}

// validSenderID follows the SNS console rule: up to 11 letters, digits or
// hyphens, at least one letter, starting and ending with a letter or digit.
func validSenderID(id string) bool {
	if id == "" || len(id) > 11 || id[0] == '-' || id[len(id)-1] == '-' {
		return false
	}
	isLetter := func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' }
	invalid := func(r rune) bool { return !isLetter(r) && (r < '0' || r > '9') && r != '-' }
	return strings.ContainsFunc(id, isLetter) && !strings.ContainsFunc(id, invalid)
}

// Message is one captured SMS.
type Message struct {
	To        string    `json:"to"`
	Text      string    `json:"text"`
	Type      string    `json:"type"`     // AWS.SNS.SMS.SMSType; "" when not set
	SenderID  string    `json:"senderId"` // AWS.SNS.SMS.SenderID; "" when not set
	MessageID string    `json:"messageId"`
	At        time.Time `json:"at"`
	// Attributes holds every String/Number message attribute by name.
	Attributes map[string]string `json:"attributes,omitempty"`
	// SuppressedReason says why an accepted publish was not delivered
	// ("opted out"); empty for delivered messages.
	SuppressedReason string `json:"suppressedReason,omitempty"`
	// Provider is the API that sent it: sns (Publish) or sms-voice (End
	// User Messaging SMS's SendTextMessage, smsvoice.go).
	Provider string `json:"provider"`
	// Origination and ConfigurationSet are a SendTextMessage's
	// OriginationIdentity and ConfigurationSetName.
	Origination      string `json:"origination,omitempty"`
	ConfigurationSet string `json:"configurationSet,omitempty"`
}

// Fault is an error the sink can be told to answer Publish with.
type Fault int

// The injectable faults, with the codes and statuses real SNS uses.
const (
	// FaultThrottling is the AWS query protocol's common throttling error
	// ("Throttling", 400, "Rate exceeded").
	FaultThrottling Fault = iota
	// FaultThrottled is SNS's modelled ThrottledException ("Throttled", 429).
	// Unlike the others, the AWS SDK for Go v2 does not retry it by itself:
	// its retryer knows the code "ThrottledException" but not "Throttled".
	FaultThrottled
	// FaultInternalError is InternalErrorException ("InternalError", 500).
	FaultInternalError
	// FaultInvalidParameter is InvalidParameterException ("InvalidParameter",
	// 400), a permanent rejection.
	FaultInvalidParameter
)

// String names the error code the fault answers with.
func (f Fault) String() string { return f.apiError().code }

func (f Fault) apiError() *apiError {
	switch f {
	case FaultThrottling:
		return &apiError{status: http.StatusBadRequest, errorType: "Sender", code: "Throttling", message: "Rate exceeded"}
	case FaultThrottled:
		return &apiError{status: http.StatusTooManyRequests, errorType: "Sender", code: "Throttled", message: "Rate exceeded"}
	case FaultInternalError:
		return &apiError{status: http.StatusInternalServerError, errorType: "Receiver", code: "InternalError", message: "Internal error (injected fault)"}
	default:
		return invalidParameter("Invalid parameter: injected fault")
	}
}

type pendingFault struct {
	remaining int
	fault     Fault
}

// Sink captures SMS publishes. It is safe for concurrent use.
type Sink struct {
	now func() time.Time

	mu         sync.Mutex
	delivered  []Message // oldest first
	suppressed []Message // oldest first
	optedOut   map[string]bool
	faults     []pendingFault
	// identities are the End User Messaging origination identities
	// (AddOriginationIdentity); none: any is accepted.
	identities map[string]bool
	// Mobile push (mobile.go): platform applications and endpoints by ARN,
	// and the captured publishes, oldest first.
	apps      map[string]*platformApp
	endpoints map[string]*endpoint
	mobile    []MobileMessage
}

// New returns an empty sink; now is its clock (nil means time.Now).
func New(now func() time.Time) *Sink {
	if now == nil {
		now = time.Now
	}
	return &Sink{now: now, optedOut: map[string]bool{}, apps: map[string]*platformApp{}, endpoints: map[string]*endpoint{}}
}

// OptOut marks number as opted out, as if its owner had replied STOP.
func (s *Sink) OptOut(number string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.optedOut[number] = true
}

// OptIn reverses OptOut (the OptInPhoneNumber action does the same).
func (s *Sink) OptIn(number string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.optedOut, number)
}

// IsOptedOut reports whether number is opted out.
func (s *Sink) IsOptedOut(number string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.optedOut[number]
}

// FailNext makes the next n Publish calls answer fault. Calls queue up and
// are served in order. The SDK retries Throttling, Throttled and
// InternalError on its own, and every attempt consumes one.
func (s *Sink) FailNext(n int, fault Fault) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, pendingFault{remaining: n, fault: fault})
}

// Messages returns the delivered SMS, newest first.
func (s *Sink) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return newestFirst(s.delivered)
}

// Suppressed returns publishes SNS accepted but would not deliver (opted-out
// numbers), newest first.
func (s *Sink) Suppressed() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return newestFirst(s.suppressed)
}

// Reset forgets captured messages and pending faults; opt-outs stay.
func (s *Sink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delivered, s.suppressed, s.faults = nil, nil, nil
}

func newestFirst(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.Attributes = copyMap(m.Attributes)
		out[len(msgs)-1-i] = m
	}
	return out
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ListHandler serves the captured SMS as JSON, newest first:
//
//	GET    → [{"to","text","type","senderId","messageId","at","provider"}, …]
//	GET ?suppressed=true → the accepted-but-undelivered publishes
//	GET ?provider=sns|sms-voice → the texts one API sent
//	DELETE → Reset
func (s *Sink) ListHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			msgs := s.Messages()
			if v, _ := strconv.ParseBool(r.URL.Query().Get("suppressed")); v {
				msgs = s.Suppressed()
			}
			if p := r.URL.Query().Get("provider"); p != "" {
				msgs = slices.DeleteFunc(msgs, func(m Message) bool { return m.Provider != p })
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(msgs)
		case http.MethodDelete:
			s.Reset()
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Allow", "GET, DELETE")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

// APIHandler serves the SNS query API on whatever path it is mounted at
// (the SDK posts to the BaseEndpoint's path).
func (s *Sink) APIHandler() http.Handler {
	return http.HandlerFunc(s.serveAPI)
}

// apiError is an SNS error answer.
type apiError struct {
	status    int
	errorType string // "Sender" (client's fault) or "Receiver"
	code      string
	message   string
}

func invalidParameter(message string) *apiError {
	return &apiError{status: http.StatusBadRequest, errorType: "Sender", code: "InvalidParameter", message: message}
}

// parameterValueInvalid is InvalidParameterValueException, which SNS returns
// for bad SMS attribute values such as a malformed sender ID.
func parameterValueInvalid(message string) *apiError {
	return &apiError{status: http.StatusBadRequest, errorType: "Sender", code: "ParameterValueInvalid", message: message}
}

func (s *Sink) serveAPI(w http.ResponseWriter, r *http.Request) {
	requestID := newUUID()
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		writeError(w, requestID, &apiError{status: http.StatusMethodNotAllowed, errorType: "Sender", code: "InvalidAction", message: "Use POST"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
	if err := r.ParseForm(); err != nil {
		writeError(w, requestID, invalidParameter("Invalid parameter: request body is not a form"))
		return
	}
	var (
		response any
		apiErr   *apiError
	)
	switch action := r.Form.Get("Action"); action {
	case "Publish":
		response, apiErr = s.publish(r.Form, requestID)
	case "CheckIfPhoneNumberIsOptedOut":
		response, apiErr = s.checkIfOptedOut(r.Form, requestID)
	case "OptInPhoneNumber":
		response, apiErr = s.optIn(r.Form, requestID)
	case "CreatePlatformEndpoint":
		response, apiErr = s.createPlatformEndpoint(r.Form, requestID)
	case "GetEndpointAttributes":
		response, apiErr = s.getEndpointAttributes(r.Form, requestID)
	case "SetEndpointAttributes":
		response, apiErr = s.setEndpointAttributes(r.Form, requestID)
	case "DeleteEndpoint":
		response, apiErr = s.deleteEndpoint(r.Form, requestID)
	default:
		apiErr = &apiError{status: http.StatusBadRequest, errorType: "Sender", code: "InvalidAction",
			message: fmt.Sprintf("The action %s is not valid for this web service.", action)}
	}
	if apiErr != nil {
		writeError(w, requestID, apiErr)
		return
	}
	writeXML(w, requestID, http.StatusOK, response)
}

type publishResponse struct {
	XMLName   xml.Name `xml:"PublishResponse"`
	Namespace string   `xml:"xmlns,attr"`
	MessageID string   `xml:"PublishResult>MessageId"`
	RequestID string   `xml:"ResponseMetadata>RequestId"`
}

func (s *Sink) publish(form map[string][]string, requestID string) (any, *apiError) {
	if firstValue(form, "TargetArn") != "" && firstValue(form, "PhoneNumber") == "" && firstValue(form, "TopicArn") == "" {
		return s.publishMobile(form, requestID)
	}
	if apiErr := s.takeFault(); apiErr != nil {
		return nil, apiErr
	}
	get := func(name string) string {
		if v := form[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	to := get("PhoneNumber")
	targets := 0
	for _, name := range []string{"PhoneNumber", "TopicArn", "TargetArn"} {
		if get(name) != "" {
			targets++
		}
	}
	switch {
	case targets > 1:
		return nil, invalidParameter("Invalid parameter: only one of PhoneNumber, TopicArn and TargetArn may be specified")
	case to == "":
		return nil, invalidParameter("Invalid parameter: PhoneNumber Reason: the local SMS sink supports Publish to a phone number only")
	case !ValidPhoneNumber(to):
		// The number itself is left out of the message: Herald keeps phone
		// numbers out of logs, and SDK errors end up in logs.
		return nil, invalidParameter("Invalid parameter: PhoneNumber Reason: not an E.164 phone number")
	}

	text, apiErr := smsText(get("Message"), get("MessageStructure"))
	if apiErr != nil {
		return nil, apiErr
	}
	attrs, apiErr := parseMessageAttributes(form)
	if apiErr != nil {
		return nil, apiErr
	}
	if t, ok := attrs[AttributeSMSType]; ok && t != "Promotional" && t != "Transactional" {
		return nil, parameterValueInvalid("Invalid parameter: AWS.SNS.SMS.SMSType must be Promotional or Transactional")
	}
	if id, ok := attrs[AttributeSenderID]; ok && !validSenderID(id) {
		return nil, parameterValueInvalid("Invalid parameter: AWS.SNS.SMS.SenderID must be 1-11 letters, digits or hyphens with at least one letter")
	}

	msg := Message{
		To:         to,
		Text:       text,
		Type:       attrs[AttributeSMSType],
		SenderID:   attrs[AttributeSenderID],
		MessageID:  newUUID(),
		At:         s.now().UTC(),
		Attributes: attrs,
		Provider:   ProviderSNS,
	}
	s.mu.Lock()
	if s.optedOut[to] {
		msg.SuppressedReason = "opted out"
		s.suppressed = append(s.suppressed, msg)
	} else {
		s.delivered = append(s.delivered, msg)
	}
	s.mu.Unlock()
	return publishResponse{Namespace: snsNamespace, MessageID: msg.MessageID, RequestID: requestID}, nil
}

// smsText applies SNS's Message rules for an SMS: non-empty UTF-8 within the
// SMS quota; with MessageStructure=json, a JSON object whose "sms" member (or
// else "default") is the text.
func smsText(message, structure string) (string, *apiError) {
	if message == "" {
		return "", invalidParameter("Invalid parameter: Empty message")
	}
	if !utf8.ValidString(message) {
		return "", invalidParameter("Invalid parameter: Message must be UTF-8")
	}
	switch structure {
	case "":
	case "json":
		var perProtocol map[string]string
		if err := json.Unmarshal([]byte(message), &perProtocol); err != nil {
			return "", invalidParameter("Invalid parameter: Message Structure - JSON message body failed to parse")
		}
		def, ok := perProtocol["default"]
		if !ok {
			return "", invalidParameter("Invalid parameter: Message Structure - No default entry in JSON message body")
		}
		message = def
		if sms, ok := perProtocol["sms"]; ok {
			message = sms
		}
		if message == "" {
			return "", invalidParameter("Invalid parameter: Empty message")
		}
	default:
		return "", invalidParameter("Invalid parameter: MessageStructure must be json")
	}
	if len(message) > MaxSMSBytes {
		return "", invalidParameter(fmt.Sprintf("Invalid parameter: Message too long for SMS (%d bytes, at most %d)", len(message), MaxSMSBytes))
	}
	return message, nil
}

// parseMessageAttributes reads the query protocol's map encoding:
//
//	MessageAttributes.entry.N.Name
//	MessageAttributes.entry.N.Value.DataType
//	MessageAttributes.entry.N.Value.StringValue (or .BinaryValue)
//
// String and Number values are returned by name; Binary ones are checked but
// not kept (SNS ignores them for SMS).
func parseMessageAttributes(form map[string][]string) (map[string]string, *apiError) {
	type entry struct{ name, dataType, stringValue, binaryValue string }
	entries := map[int]*entry{}
	for key, values := range form {
		rest, ok := strings.CutPrefix(key, "MessageAttributes.entry.")
		if !ok || len(values) == 0 {
			continue
		}
		indexText, field, ok := strings.Cut(rest, ".")
		index, err := strconv.Atoi(indexText)
		if !ok || err != nil || index < 1 {
			return nil, invalidParameter("Invalid parameter: MessageAttributes")
		}
		e := entries[index]
		if e == nil {
			e = &entry{}
			entries[index] = e
		}
		switch field {
		case "Name":
			e.name = values[0]
		case "Value.DataType":
			e.dataType = values[0]
		case "Value.StringValue":
			e.stringValue = values[0]
		case "Value.BinaryValue":
			e.binaryValue = values[0]
		}
	}
	if len(entries) == 0 {
		return nil, nil
	}
	indexes := make([]int, 0, len(entries))
	for i := range entries {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	attrs := make(map[string]string, len(entries))
	seen := make(map[string]bool, len(entries))
	for _, i := range indexes {
		e := entries[i]
		if e.name == "" {
			return nil, invalidParameter("Invalid parameter: MessageAttributes Reason: attribute without a name")
		}
		if seen[e.name] {
			return nil, invalidParameter("Invalid parameter: MessageAttributes Reason: duplicate attribute " + e.name)
		}
		seen[e.name] = true
		if (e.name == AttributeSMSType || e.name == AttributeSenderID) && e.dataType != "String" {
			return nil, parameterValueInvalid("Invalid parameter: " + e.name + " must have DataType String")
		}
		// Custom types extend a base type: "String.Array", "Number.float".
		switch baseType, _, _ := strings.Cut(e.dataType, "."); baseType {
		case "String", "Number":
			if e.stringValue == "" {
				return nil, invalidParameter("Invalid parameter: MessageAttributes Reason: " + e.name + " has an empty value")
			}
			attrs[e.name] = e.stringValue
		case "Binary":
			if e.binaryValue == "" {
				return nil, invalidParameter("Invalid parameter: MessageAttributes Reason: " + e.name + " has an empty value")
			}
		default:
			return nil, invalidParameter("Invalid parameter: MessageAttributes Reason: " + e.name + " has an unsupported DataType")
		}
	}
	return attrs, nil
}

func (s *Sink) takeFault() *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return nil
	}
	f := s.faults[0].fault
	s.faults[0].remaining--
	if s.faults[0].remaining == 0 {
		s.faults = s.faults[1:]
	}
	return f.apiError()
}

type checkIfOptedOutResponse struct {
	XMLName    xml.Name `xml:"CheckIfPhoneNumberIsOptedOutResponse"`
	Namespace  string   `xml:"xmlns,attr"`
	IsOptedOut bool     `xml:"CheckIfPhoneNumberIsOptedOutResult>isOptedOut"`
	RequestID  string   `xml:"ResponseMetadata>RequestId"`
}

func (s *Sink) checkIfOptedOut(form map[string][]string, requestID string) (any, *apiError) {
	number := firstValue(form, "phoneNumber")
	if !ValidPhoneNumber(number) {
		return nil, invalidParameter("Invalid parameter: PhoneNumber Reason: not an E.164 phone number")
	}
	return checkIfOptedOutResponse{Namespace: snsNamespace, IsOptedOut: s.IsOptedOut(number), RequestID: requestID}, nil
}

// optInResponse carries an empty OptInPhoneNumberResult: the SDK fails to
// deserialise the answer without it.
type optInResponse struct {
	XMLName   xml.Name `xml:"OptInPhoneNumberResponse"`
	Namespace string   `xml:"xmlns,attr"`
	Result    struct{} `xml:"OptInPhoneNumberResult"`
	RequestID string   `xml:"ResponseMetadata>RequestId"`
}

func (s *Sink) optIn(form map[string][]string, requestID string) (any, *apiError) {
	number := firstValue(form, "phoneNumber")
	if !ValidPhoneNumber(number) {
		return nil, invalidParameter("Invalid parameter: PhoneNumber Reason: not an E.164 phone number")
	}
	s.OptIn(number)
	return optInResponse{Namespace: snsNamespace, RequestID: requestID}, nil
}

func firstValue(form map[string][]string, name string) string {
	if v := form[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

type errorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Namespace string   `xml:"xmlns,attr"`
	Error     struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

func writeError(w http.ResponseWriter, requestID string, e *apiError) {
	resp := errorResponse{Namespace: snsNamespace, RequestID: requestID}
	resp.Error.Type = e.errorType
	resp.Error.Code = e.code
	resp.Error.Message = e.message
	writeXML(w, requestID, e.status, resp)
}

// writeXML answers like SNS: text/xml and the request id in the
// x-amzn-RequestId header, where the SDK reads it for ResultMetadata.
func writeXML(w http.ResponseWriter, requestID string, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, "encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", requestID)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// newUUID returns a random (version 4) UUID, the form of SNS message and
// request ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
