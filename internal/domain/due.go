package domain

import "time"

// DuePartition names one partition of the due-time index: deferred deliveries
// due within one time bucket, spread over shards by a hash of the delivery, so
// that no partition takes more writes than DynamoDB allows one partition and
// the scheduler can release the shards in parallel.
type DuePartition struct {
	// Bucket is the start of the bucket (UTC).
	Bucket time.Time `json:"bucket"`
	Shard  int       `json:"shard"`
}
