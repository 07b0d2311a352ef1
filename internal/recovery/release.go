package recovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DuePartition names one partition of the due-time index: deferred deliveries
// due within one time bucket, spread over shards by a hash of the delivery, so
// that no partition takes more writes than DynamoDB allows one partition and
// the scheduler can release the shards in parallel.
type DuePartition struct {
	// Bucket is the start of the bucket (UTC).
	Bucket time.Time `json:"bucket"`
	Shard  int       `json:"shard"`
}

// ErrMalformedRelease marks a release message that names no due partition.
var ErrMalformedRelease = errors.New("malformed release message")

// DecodeReleaseMessage strictly decodes a release queue body: the due
// partition the scheduler's tick asked to release (unknown fields, a zero
// bucket or a negative shard are ErrMalformedRelease).
func DecodeReleaseMessage(body string) (DuePartition, error) {
	var p DuePartition
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("%w: %v", ErrMalformedRelease, err)
	}
	if p.Bucket.IsZero() || p.Shard < 0 {
		return p, fmt.Errorf("%w: bucket %v shard %d", ErrMalformedRelease, p.Bucket, p.Shard)
	}
	return p, nil
}
