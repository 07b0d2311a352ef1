package smssink

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Provider labels of captured SMS: which API sent them.
const (
	ProviderSNS      = "sns"
	ProviderSMSVoice = "sms-voice"
)

// sendTextMessageTarget is the X-Amz-Target of End User Messaging SMS's
// SendTextMessage (AWS JSON 1.0 protocol, service PinpointSMSVoiceV2).
const sendTextMessageTarget = "PinpointSMSVoiceV2.SendTextMessage"

// maxTextBodyChars is SendTextMessage's MessageBody limit (the API
// reference: length 1 to 1600).
const maxTextBodyChars = 1600

// AddOriginationIdentity makes arn (a phone number, pool or sender ID ARN)
// one the sink sends from. Once one is added, a SendTextMessage naming
// another answers ResourceNotFoundException, as End User Messaging does for
// an identity the account does not have.
func (s *Sink) AddOriginationIdentity(arn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.identities == nil {
		s.identities = map[string]bool{}
	}
	s.identities[arn] = true
}

// SMSVoiceHandler serves End User Messaging SMS's SendTextMessage in the AWS
// JSON 1.0 protocol (POST, X-Amz-Target PinpointSMSVoiceV2.SendTextMessage),
// exact enough that the SDK's pinpointsmsvoicev2 client talks to it through
// BaseEndpoint. Sent texts are captured beside SNS's, labelled sms-voice.
// An opted-out number is refused (ConflictException
// DESTINATION_PHONE_NUMBER_OPTED_OUT) as End User Messaging does, unlike SNS
// which accepts and drops it; the two share the sink's opt-out list, as an
// account's SNS SMS and End User Messaging share its default opt-out list.
func (s *Sink) SMSVoiceHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requestID := newUUID()
		if r.Method != http.MethodPost {
			writeJSONError(w, requestID, http.StatusBadRequest, "ValidationException", "UNKNOWN_OPERATION", "use POST")
			return
		}
		if target := r.Header.Get("X-Amz-Target"); target != sendTextMessageTarget {
			writeJSONError(w, requestID, http.StatusBadRequest, "ValidationException", "UNKNOWN_OPERATION",
				fmt.Sprintf("the local End User Messaging SMS endpoint serves %s only, not %q", sendTextMessageTarget, target))
			return
		}
		var in struct {
			DestinationPhoneNumber string
			MessageBody            string
			MessageType            string
			OriginationIdentity    string
			ConfigurationSetName   string
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes)).Decode(&in); err != nil {
			writeJSONError(w, requestID, http.StatusBadRequest, "ValidationException", "CANNOT_PARSE", "the request body is not JSON")
			return
		}
		msg, status, code, reason, text := s.sendText(in.DestinationPhoneNumber, in.MessageBody, in.MessageType, in.OriginationIdentity, in.ConfigurationSetName)
		if code != "" {
			writeJSONError(w, requestID, status, code, reason, text)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-RequestId", requestID)
		_ = json.NewEncoder(w).Encode(map[string]string{"MessageId": msg.MessageID})
	})
}

// sendText validates and captures one SendTextMessage; a non-empty code is
// the error answer (its HTTP status, exception, reason and message).
func (s *Sink) sendText(to, body, messageType, identity, configurationSet string) (msg Message, status int, code, reason, text string) {
	invalid := func(reason, text string) (Message, int, string, string, string) {
		return Message{}, http.StatusBadRequest, "ValidationException", reason, text
	}
	switch {
	case to == "":
		return invalid("MISSING_PARAMETER", "DestinationPhoneNumber is required")
	case !ValidPhoneNumber(to):
		// The number is left out: Herald keeps numbers out of logs.
		return invalid("INVALID_PARAMETER", "DestinationPhoneNumber is not an E.164 phone number")
	case body == "" || !utf8.ValidString(body) || utf8.RuneCountInString(body) > maxTextBodyChars:
		return invalid("FIELD_VALIDATION_FAILED", fmt.Sprintf("MessageBody must be 1 to %d characters", maxTextBodyChars))
	case messageType != "" && messageType != "TRANSACTIONAL" && messageType != "PROMOTIONAL":
		return invalid("FIELD_VALIDATION_FAILED", "MessageType must be TRANSACTIONAL or PROMOTIONAL")
	case strings.ContainsFunc(configurationSet, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("_:/-", r))
	}):
		return invalid("FIELD_VALIDATION_FAILED", "ConfigurationSetName must match [A-Za-z0-9_:/-]+")
	}
	if apiErr := s.takeFault(); apiErr != nil {
		// FailNext's faults answer both APIs, each in its own protocol.
		code := jsonCodes[apiErr.code]
		status := http.StatusBadRequest // every SendTextMessage error but InternalServerException's
		if code == "InternalServerException" {
			status = http.StatusInternalServerError
		}
		return Message{}, status, code, "", apiErr.message
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.identities) > 0 && !s.identities[identity] {
		return Message{}, http.StatusBadRequest, "ResourceNotFoundException", "", "the origination identity does not exist in this account"
	}
	if s.optedOut[to] {
		return Message{}, http.StatusBadRequest, "ConflictException", "DESTINATION_PHONE_NUMBER_OPTED_OUT", "the destination phone number is opted out"
	}
	msg = Message{To: to, Text: body, Type: messageType, MessageID: newUUID(), At: s.now().UTC(), Provider: ProviderSMSVoice,
		Origination: identity, ConfigurationSet: configurationSet}
	s.delivered = append(s.delivered, msg)
	return msg, http.StatusOK, "", "", ""
}

// jsonCodes are the End User Messaging exceptions of the sink's injectable
// faults (FailNext).
var jsonCodes = map[string]string{
	"Throttling": "ThrottlingException", "Throttled": "ThrottlingException",
	"InternalError": "InternalServerException", "InvalidParameter": "ValidationException",
}

// writeJSONError answers like an AWS JSON 1.0 service: the exception's name
// in X-Amzn-ErrorType and __type, its Reason beside the message.
func writeJSONError(w http.ResponseWriter, requestID string, status int, code, reason, message string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-RequestId", requestID)
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	body := map[string]string{"__type": code, "message": message}
	if reason != "" {
		body["Reason"] = reason
	}
	_ = json.NewEncoder(w).Encode(body)
}
