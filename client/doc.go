// Package client calls Herald's service routes from Go.
//
// A Client signs every request with AWS Signature Version 4 for the
// execute-api service, with credentials from the AWS SDK's default chain
// (environment, shared config and SSO profiles, web identity, ECS and EC2
// roles) and the SDK's own signer, as API Gateway's IAM authorization
// expects. Against the local stack (`make dev`), WithDevCaller replaces
// signing with the X-Herald-Dev-Caller header the local gateway reads.
//
// Every call takes a context. Requests that fail with a network error, a 5xx
// or a 429 are retried with exponential backoff and jitter (honouring
// Retry-After). Retried creates carry the same Idempotency-Key: Send
// generates one when the caller gives neither a key nor a resourceId,
// SendBatch one per item without a key (written into the caller's slice) and
// CreateCampaign and CreateAnnouncement one each, so a retry replays the first
// answer instead of creating a second notification. Batch items answered 5xx
// (503 "timeout": the batch's invocation had no time left to store them) or
// 429 are sent again on their own with their keys; BatchResult.Retryable
// names any left when the attempts run out.
//
// Herald's errors are RFC 9457 problem documents; they come back as *Error
// with the stable Code, the JSON Pointer of the offending field and the HTTP
// Status:
//
//	var herr *client.Error
//	if errors.As(err, &herr) && herr.Code == "missing_variable" {
//		log.Printf("fix %s", herr.Pointer)
//	}
//
// The end user's inbox routes take the user's JWT and are called by browsers
// (see web/herald-inbox.js), not by this package.
package client
