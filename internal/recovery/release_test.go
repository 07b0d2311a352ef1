package recovery

import (
	"errors"
	"testing"
	"time"
)

func TestDecodeReleaseMessage(t *testing.T) {
	bucket := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		body string
		want DuePartition
		ok   bool
	}{
		{`{"bucket":"2026-12-03T08:00:00Z","shard":17}`, DuePartition{Bucket: bucket, Shard: 17}, true},
		{`{"bucket":"2026-12-03T08:00:00Z","shard":0}`, DuePartition{Bucket: bucket}, true},
		{`{"bucket":"2026-12-03T08:00:00Z","shard":-1}`, DuePartition{}, false},
		{`{"shard":3}`, DuePartition{}, false},
		{`{"bucket":"2026-12-03T08:00:00Z","shard":1,"extra":true}`, DuePartition{}, false},
		{`not json`, DuePartition{}, false},
	}
	for _, tt := range tests {
		got, err := DecodeReleaseMessage(tt.body)
		if tt.ok != (err == nil) || (!tt.ok && !errors.Is(err, ErrMalformedRelease)) {
			t.Errorf("%s: err %v, want ok=%v", tt.body, err, tt.ok)
			continue
		}
		if tt.ok && (!got.Bucket.Equal(tt.want.Bucket) || got.Shard != tt.want.Shard) {
			t.Errorf("%s: %+v, want %+v", tt.body, got, tt.want)
		}
	}
}
