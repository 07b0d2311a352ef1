package live

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/inbox"
)

// ConnectionReader reads users' connections, many users in one batch read.
type ConnectionReader interface {
	Connections(ctx context.Context, users []string) (map[string][]Connection, error)
	RemoveConnection(ctx context.Context, user, connectionID string) (left []Connection, err error)
}

// Badger counts a user's unread inbox items as the badge shows them.
type Badger interface {
	Badge(ctx context.Context, user string) (Unread, error)
}

// Sender posts to a connection (PostToConnection); ErrGone when it is gone.
type Sender interface {
	PostToConnection(ctx context.Context, connectionID string, data []byte) error
}

// Poster consumes the live queue: for each batch of inbox changes it reads
// the users' connections in one batch read and posts only to users with an
// open connection. A failed post is dropped (the inbox stays the truth); a
// gone connection is deleted.
type Poster struct {
	Connections ConnectionReader
	Badge       Badger
	Sender      Sender
	Now         func() time.Time
	Log         *slog.Logger
	// Concurrency bounds the users posted to at once; 0 means 16.
	Concurrency int
	// Online and Queue serve broadcasts (an announcement to every online
	// user): a shard's page of users, and its continuation. Without them a
	// broadcast message is dropped.
	Online OnlineReader
	Queue  BroadcastQueue
	// Evict, Closer and Later serve a Close (an eviction a connect could
	// not finish): EvictConnection when the record is still to be removed,
	// DeleteConnection, and the Close sent again while the connection may
	// still be connecting. Without them it is dropped.
	Evict  ConnectionEvictor
	Closer Closer
	Later  LaterCloser
	// Progress takes each broadcast page once (required with Online and
	// Queue).
	Progress BroadcastProgress
	// BroadcastRate bounds a broadcast's pace, in users a second all
	// shards together (each post makes the kit refetch the inbox); 0 means
	// DefaultBroadcastRate.
	BroadcastRate float64
}

// BroadcastPage is how many online-set entries one broadcast message
// evaluates (one Query page; its users' connections are one BatchGetItem).
const BroadcastPage = 100

// DefaultBroadcastRate is the template's LiveBroadcastRate default.
const DefaultBroadcastRate = 500

// AnnouncementIncluder is a Badger that can be told of an announcement a
// broadcast names, so that the badge counts it (StoreBadge).
type AnnouncementIncluder interface {
	Include(ctx context.Context, id string) error
}

// continuationDelay paces a shard: the next page of a shard waits as long
// as its share of the rate takes to post the users just posted.
func (p *Poster) continuationDelay(users int) time.Duration {
	rate := p.BroadcastRate
	if rate <= 0 {
		rate = DefaultBroadcastRate
	}
	return time.Duration(float64(users) * OnlineShards / rate * float64(time.Second))
}

// Handle posts one batch of queue messages. Only a message that cannot be
// decoded is reported as failed (it reaches the DLQ); post failures are
// dropped.
func (p *Poster) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var t tally
	resp := p.handle(ctx, ev, &t)
	// Counts only: no user, connection or message text in logs.
	p.Log.InfoContext(ctx, "live posts", "posted", t.posted.Load(), "gone", t.gone.Load(), "dropped", t.dropped.Load(),
		"broadcastUsers", t.broadcast.Load(), "closed", t.closed.Load(), "malformed", len(resp.BatchItemFailures))
	return resp, nil
}

// tally counts one invocation's outcomes.
type tally struct{ posted, gone, dropped, broadcast, closed atomic.Int64 }

func (p *Poster) handle(ctx context.Context, ev events.SQSEvent, t *tally) events.SQSEventResponse {
	var resp events.SQSEventResponse
	perUser := map[string][]Event{}
	var users []string
	for _, m := range ev.Records {
		var b Batch
		if err := json.Unmarshal([]byte(m.Body), &b); err != nil || !valid(b) {
			p.Log.ErrorContext(ctx, "malformed live message", "messageId", m.MessageId)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		if b.Close != nil {
			p.closeLater(ctx, *b.Close, t)
			continue
		}
		events := b.Events
		if b.Broadcast != nil {
			events = p.broadcastPage(ctx, *b.Broadcast, t)
		}
		for _, e := range events {
			if _, ok := perUser[e.UserID]; !ok {
				users = append(users, e.UserID)
			}
			perUser[e.UserID] = append(perUser[e.UserID], e)
		}
	}
	if len(users) == 0 {
		return resp
	}
	conns, err := p.Connections.Connections(ctx, users)
	if err != nil {
		p.Log.WarnContext(ctx, "live connections read failed; posts dropped", "error", err)
		t.dropped.Add(int64(len(users)))
		return resp
	}
	now := p.Now()
	var open []string
	for _, u := range users {
		if hasOpen(conns[u], now) {
			open = append(open, u)
		}
	}
	conc := p.Concurrency
	if conc <= 0 {
		conc = 16
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for _, u := range open {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p.postUser(ctx, u, perUser[u], conns[u], now, t)
		}()
	}
	wg.Wait()
	return resp
}

func hasOpen(cs []Connection, now time.Time) bool {
	for _, c := range cs {
		if c.Open(now) {
			return true
		}
	}
	return false
}

// broadcastPage reads one page of the broadcast's shard, makes the badge
// count the announcement, takes the page (Progress: once, whatever the
// deliveries of its message), sends the shard's continuation (paced), and
// returns the page's users' events. A page taken already returns nothing:
// it was posted and continued by an earlier delivery. A failure drops the
// rest of the shard (logged): the inbox stays the truth.
func (p *Poster) broadcastPage(ctx context.Context, b Broadcast, t *tally) []Event {
	if p.Online == nil || p.Queue == nil || p.Progress == nil {
		p.Log.WarnContext(ctx, "live broadcast without an online set; dropped")
		t.dropped.Add(1)
		return nil
	}
	users, next, err := p.Online.OnlineUsers(ctx, b.Shard, b.After, p.Now(), BroadcastPage)
	if err != nil {
		p.Log.WarnContext(ctx, "live online set read failed; broadcast shard dropped", "announcementId", b.ID, "shard", b.Shard, "error", err)
		t.dropped.Add(1)
		return nil
	}
	if inc, ok := p.Badge.(AnnouncementIncluder); ok && len(users) > 0 {
		if err := inc.Include(ctx, b.ID); err != nil {
			p.Log.WarnContext(ctx, "live announcement read failed; broadcast shard dropped", "announcementId", b.ID, "shard", b.Shard, "error", err)
			t.dropped.Add(1)
			return nil
		}
	}
	// Taken before the continuation goes out and the page is posted: a
	// crash between the two ends the shard's broadcast (the inbox shows
	// the announcement all the same), never forks it.
	taken, err := p.Progress.AdvanceBroadcast(ctx, b.ID, b.Shard, b.After, next)
	if err != nil {
		p.Log.WarnContext(ctx, "live broadcast progress failed; broadcast shard dropped", "announcementId", b.ID, "shard", b.Shard, "error", err)
		t.dropped.Add(1)
		return nil
	}
	if !taken {
		p.Log.InfoContext(ctx, "live broadcast page taken already; skipped", "announcementId", b.ID, "shard", b.Shard)
		return nil
	}
	if next != "" {
		cont := Broadcast{ID: b.ID, Shard: b.Shard, After: next}
		if err := p.Queue.Broadcast(ctx, []Broadcast{cont}, p.continuationDelay(len(users))); err != nil {
			p.Log.WarnContext(ctx, "live broadcast continuation failed; rest of the shard dropped", "announcementId", b.ID, "shard", b.Shard, "error", err)
			t.dropped.Add(1)
		}
	}
	t.broadcast.Add(int64(len(users)))
	evs := make([]Event, len(users))
	for i, u := range users {
		evs[i] = Event{UserID: u, Kind: KindCreated, ID: b.ID}
	}
	return evs
}

func valid(b Batch) bool {
	if c := b.Close; c != nil {
		return len(b.Events) == 0 && b.Broadcast == nil && c.ConnectionID != "" && !c.Until.IsZero() && c.Attempt >= 0
	}
	if bc := b.Broadcast; bc != nil {
		return len(b.Events) == 0 && inbox.IsAnnouncementID(bc.ID) && bc.Shard >= 0 && bc.Shard < OnlineShards
	}
	for _, e := range b.Events {
		if e.UserID == "" || (e.Kind != KindCreated && e.Kind != KindUpdated) {
			return false
		}
	}
	return true
}

// postUser sends each of the user's events, with the badge read once after
// them all, to each open connection.
func (p *Poster) postUser(ctx context.Context, user string, evs []Event, cs []Connection, now time.Time, t *tally) {
	badge, err := p.Badge.Badge(ctx, user)
	if err != nil {
		p.Log.WarnContext(ctx, "live badge read failed; posts dropped", "error", err)
		t.dropped.Add(int64(len(evs)))
		return
	}
	gone := map[string]bool{}
	for _, e := range evs {
		body, _ := json.Marshal(Message{Kind: e.Kind, ID: e.ID, Unread: badge})
		for _, c := range cs {
			if !c.Open(now) || gone[c.ID] {
				continue
			}
			err := p.Sender.PostToConnection(ctx, c.ID, body)
			switch {
			case err == nil:
				t.posted.Add(1)
			case isGone(err):
				gone[c.ID] = true
				if _, err := p.Connections.RemoveConnection(ctx, user, c.ID); err != nil {
					p.Log.WarnContext(ctx, "remove gone connection failed", "error", err)
				}
				t.gone.Add(1)
			default:
				p.Log.WarnContext(ctx, "live post failed; dropped", "error", err)
				t.dropped.Add(1)
			}
		}
	}
}

func isGone(err error) bool { return errors.Is(err, ErrGone) }
