package ops

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/internal/live"
)

// ErrLiveNotRedriven: the live DLQ is inspected and purged, not redriven.
// Its messages nudge open browser tabs, which refetch their inbox whenever
// they (re)connect: minutes later a post is worth nothing.
var ErrLiveNotRedriven = errors.New("the live DLQ is not redriven: its posts are minutes old and open tabs refetch their inbox on (re)connect; read them with `herald dlq show live`, fix the cause, then `herald dlq purge live --yes` (docs/runbook.md, Live DLQ not empty)")

// LiveMessage describes a live DLQ message by kind, never naming a user or
// a connection: inbox changes (how many, of which kinds), an
// announcement's broadcast page (announcement and shard), or an evicted
// connection to close (calls made).
type LiveMessage struct {
	Kind   string   `json:"kind"` // events, broadcast, close
	Events int      `json:"events,omitempty"`
	Kinds  []string `json:"kinds,omitempty"`
	// AnnouncementID and Shard are a broadcast page's.
	AnnouncementID string `json:"announcementId,omitempty"`
	Shard          *int   `json:"shard,omitempty"`
	// Attempts are the calls a close made; Evict is true while the
	// connection's record was still to be removed.
	Attempts int  `json:"attempts,omitempty"`
	Evict    bool `json:"evict,omitempty"`
}

// describeLiveMessage reads a live DLQ message.
func describeLiveMessage(m sqstypes.Message, p *Parked) {
	var b live.Batch
	if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &b); err != nil {
		p.Problem = "malformed body: not a live queue message"
		return
	}
	switch {
	case b.Close != nil:
		p.Live = &LiveMessage{Kind: "close", Attempts: b.Close.Attempt, Evict: b.Close.User != ""}
	case b.Broadcast != nil:
		shard := b.Broadcast.Shard
		p.Live = &LiveMessage{Kind: "broadcast", AnnouncementID: b.Broadcast.ID, Shard: &shard}
	default:
		l := &LiveMessage{Kind: "events", Events: len(b.Events)}
		for _, e := range b.Events {
			if !slices.Contains(l.Kinds, e.Kind) {
				l.Kinds = append(l.Kinds, e.Kind)
			}
		}
		slices.Sort(l.Kinds)
		p.Live = l
	}
}
