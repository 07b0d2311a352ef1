package catalog

import (
	"strings"
	"unicode/utf16"
)

// SMS segment budget.
//
// Every SMS template must fit ONE segment, whatever the data, so an OTP or a
// security alert is never split (split messages can arrive out of order or
// partly, and each segment is billed). A single segment holds:
//
//   - GSM-7 (GSM 03.38 default alphabet): 160 septets. Characters of the
//     extension table (^ { } \ [ ~ ] | € and form feed) take two septets each.
//   - UCS-2, used as soon as one character is outside GSM-7 (e.g. any Japanese
//     text): 70 UTF-16 code units. A character outside the Basic Multilingual
//     Plane (most emoji) takes two.
//
// The budget is enforced where it can be, ahead of any send: Lint renders each
// SMS template with worst-case data — every variable at its declared maxLength,
// filled with the characters that cost the most (url: '~', two septets in
// GSM-7; text: an emoji, which forces UCS-2 and costs two units; code: letters
// and digits, one septet) — and fails when the result does not fit. Intake
// enforces maxLength and the url/code alphabets (ValidateData), so real data
// can never cost more than the worst case the lint checked.
const (
	SMSSegmentGSM7 = 160 // septets in one GSM-7 segment
	SMSSegmentUCS2 = 70  // UTF-16 code units in one UCS-2 segment
)

// SMSEncoding is the encoding a handset network uses for a message.
type SMSEncoding string

const (
	EncodingGSM7 SMSEncoding = "GSM-7"
	EncodingUCS2 SMSEncoding = "UCS-2"
)

// gsm7Basic is the GSM 03.38 default alphabet (one septet each); gsm7Extension
// are the characters reached through the escape code (two septets each).
const (
	gsm7Basic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
		"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsm7Extension = "\f^{}\\[~]|€"
)

// SMSLength returns the encoding a message needs and its length in that
// encoding's units (septets for GSM-7, UTF-16 code units for UCS-2).
func SMSLength(text string) (SMSEncoding, int) {
	septets := 0
	for _, r := range text {
		switch {
		case strings.ContainsRune(gsm7Basic, r):
			septets++
		case strings.ContainsRune(gsm7Extension, r):
			septets += 2
		default:
			return EncodingUCS2, len(utf16.Encode([]rune(text)))
		}
	}
	return EncodingGSM7, septets
}

// SMSFitsOneSegment reports whether text fits one SMS segment, with its
// encoding and length.
func SMSFitsOneSegment(text string) (fits bool, enc SMSEncoding, length int) {
	enc, length = SMSLength(text)
	limit := SMSSegmentGSM7
	if enc == EncodingUCS2 {
		limit = SMSSegmentUCS2
	}
	return length <= limit, enc, length
}
