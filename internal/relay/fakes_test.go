package relay_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/recovery"
	"github.com/heraldhq/herald/internal/storetest"
)

// memStore is an in-memory relay.Store with the table's conditional
// semantics: create-if-absent deliveries, transitions from allowed states, a
// rate counter idempotent per notification and digests keyed like the real
// ones.
type memStore struct {
	*storetest.MemBudgets
	mu           sync.Mutex
	profiles     map[string]*domain.RecipientProfile
	deliveries   *storetest.MemDeliveries
	counters     map[string][]string // user#channel#window → counted ids
	heads        map[string]digestHead
	members      map[string][]string // leader → member ids
	profileReads map[string]int      // queries of a user's partition
	batchReads   int                 // ReadPlanning calls
	batchUsers   map[string]int      // profiles read by ReadPlanning
	countCalls   int
	// failures to inject: by notification id
	failCreate     map[string]error
	failTransition map[string]int // remaining failures
	failProfile    map[string]error
	failBatchRead  error
	// watches are the armed in-flight watches; failWatch fails ArmWatch.
	watches   []recovery.Watch
	failWatch error
	// notes are the failure notes by sequence number; failNote fails
	// NoteRelayFailure.
	notes    map[string]recovery.RelayFailure
	failNote error
}

func (s *memStore) NoteRelayFailure(_ context.Context, f recovery.RelayFailure) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failNote != nil {
		return s.failNote
	}
	if s.notes == nil {
		s.notes = map[string]recovery.RelayFailure{}
	}
	s.notes[f.SequenceNumber] = f
	return nil
}

func (s *memStore) ArmWatch(_ context.Context, w recovery.Watch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failWatch != nil {
		return s.failWatch
	}
	s.watches = append(s.watches, w)
	return nil
}

type digestHead struct {
	leader string
	end    time.Time
}

func newMemStore() *memStore {
	return &memStore{
		MemBudgets: &storetest.MemBudgets{},
		profiles:   map[string]*domain.RecipientProfile{}, deliveries: storetest.NewMemDeliveries(nil),
		counters: map[string][]string{}, heads: map[string]digestHead{}, members: map[string][]string{},
		profileReads: map[string]int{}, failCreate: map[string]error{}, failTransition: map[string]int{},
		failProfile: map[string]error{}, batchUsers: map[string]int{},
	}
}

func dkey(id string, c domain.Channel) string { return id + "/" + string(c) }

// claimQueued plays the workers on the published messages: each claim
// creates its delivery (a channel sent at once has no item before) or
// claims a queued one.
func (s *memStore) claimQueued(p *memPublisher) {
	p.mu.Lock()
	sent := slices.Clone(p.sent)
	p.mu.Unlock()
	for _, it := range sent {
		m := it.Message
		_, _ = s.deliveries.Transition(context.Background(), m.NotificationID, m.Channel, domain.Change{
			To: domain.StatusSending, From: []domain.Status{domain.StatusPlanned, domain.StatusQueued, domain.StatusRetrying},
			Create: &domain.Delivery{UserID: m.UserID, Priority: it.Priority, CampaignID: m.CampaignID}})
	}
}

func (s *memStore) GetRecipientProfile(_ context.Context, userID string) (*domain.RecipientProfile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.profileReads[userID]++
	if err := s.failProfile[userID]; err != nil {
		return nil, err
	}
	if p, ok := s.profiles[userID]; ok {
		cp := *p
		return &cp, nil
	}
	return &domain.RecipientProfile{Preferences: domain.Preferences{}}, nil
}

func (s *memStore) ReadPlanning(_ context.Context, keys []domain.DeliveryKey, users []string) (map[domain.DeliveryKey]domain.Delivery, map[string]*domain.RecipientProfile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batchReads++
	if s.failBatchRead != nil {
		return nil, nil, s.failBatchRead
	}
	existing := map[domain.DeliveryKey]domain.Delivery{}
	for _, k := range keys {
		if d, ok := s.deliveries.Get(k.NotificationID, k.Channel); ok {
			existing[k] = d
		}
	}
	profiles := map[string]*domain.RecipientProfile{}
	for _, u := range users {
		s.batchUsers[u]++
		p := &domain.RecipientProfile{Preferences: domain.Preferences{}}
		if stored, ok := s.profiles[u]; ok {
			p.User, p.Preferences, p.Budget = stored.User, stored.Preferences, stored.Budget // no push subscriptions in a batch read
		}
		profiles[u] = p
	}
	return existing, profiles, nil
}

// CreateDelivery and Transition are the shared in-memory table's
// (storetest.MemDeliveries, which runs the store contract with the DynamoDB
// adapter), with failures to inject.
func (s *memStore) CreateDelivery(ctx context.Context, d *domain.Delivery) (*domain.Delivery, error) {
	s.mu.Lock()
	err := s.failCreate[d.NotificationID]
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.deliveries.CreateDelivery(ctx, d)
}

func (s *memStore) Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	s.mu.Lock()
	if s.failTransition[id] > 0 {
		s.failTransition[id]--
		s.mu.Unlock()
		return nil, errors.New("injected transition failure")
	}
	s.mu.Unlock()
	return s.deliveries.Transition(ctx, id, ch, c)
}

func (s *memStore) CountDelivery(_ context.Context, userID string, c domain.Channel, windowStart time.Time, _ time.Duration, limit int, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.countCalls++
	if limit <= 0 {
		return true, nil
	}
	k := userID + "#" + string(c) + "#" + windowStart.String()
	ids := s.counters[k]
	if slices.Contains(ids, id) {
		return true, nil
	}
	if len(ids) >= limit {
		return false, nil
	}
	s.counters[k] = append(ids, id)
	return true, nil
}

func (s *memStore) JoinDigest(_ context.Context, req domain.DigestRequest) (domain.DigestOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := req.Key.UserID + "#" + string(req.Key.Channel) + "#" + req.Key.BatchKey
	h, ok := s.heads[k]
	if !ok || !h.end.After(req.CreatedAt) {
		s.heads[k] = digestHead{leader: req.NotificationID, end: req.WindowEnd}
		return domain.DigestOutcome{Role: domain.DigestLeader, DigestID: req.NotificationID, WindowEnd: req.WindowEnd}, nil
	}
	if h.leader == req.NotificationID {
		return domain.DigestOutcome{Role: domain.DigestLeader, DigestID: h.leader, WindowEnd: h.end}, nil
	}
	if !slices.Contains(s.members[h.leader], req.NotificationID) {
		s.members[h.leader] = append(s.members[h.leader], req.NotificationID)
	}
	return domain.DigestOutcome{Role: domain.DigestJoined, DigestID: h.leader, WindowEnd: h.end}, nil
}

func (s *memStore) delivery(id string, c domain.Channel) (domain.Delivery, bool) {
	return s.deliveries.Get(id, c)
}

// memPublisher records published work items; it can fail items by id.
type memPublisher struct {
	mu    sync.Mutex
	sent  []domain.WorkItem
	calls int
	fail  map[string]bool
}

func (p *memPublisher) Publish(_ context.Context, items []domain.WorkItem) []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	errs := make([]error, len(items))
	for i, it := range items {
		if p.fail[it.Message.NotificationID] {
			errs[i] = errors.New("injected send failure")
			continue
		}
		p.sent = append(p.sent, it)
	}
	return errs
}

// perDelivery counts published messages per notification/channel.
func (p *memPublisher) perDelivery() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, it := range p.sent {
		out[dkey(it.Message.NotificationID, it.Message.Channel)]++
	}
	return out
}

// insert builds the stream record of a new notification item, in the shape
// internal/dynamo stores it.
func insert(seq string, n *domain.Notification) events.DynamoDBEventRecord {
	s := events.NewStringAttribute
	img := map[string]events.DynamoDBAttributeValue{
		"pk": s("N#" + n.ID), "sk": s("N"), "kind": s("notification"), "id": s(n.ID), "caller": s("svc"),
		"type": s(n.Type), "userId": s(n.Recipient.UserID), "priority": s(string(n.Priority)),
		"createdAt": s(n.CreatedAt.UTC().Format(time.RFC3339Nano)), "status": s("accepted"),
	}
	if n.Recipient.Email != "" {
		img["email"] = s(n.Recipient.Email)
	}
	if n.Recipient.Phone != "" {
		img["phone"] = s(n.Recipient.Phone)
	}
	if n.BatchKey != "" {
		img["batchKey"] = s(n.BatchKey)
	}
	if !n.SendAt.IsZero() {
		img["sendAt"] = s(n.SendAt.UTC().Format(time.RFC3339Nano))
	}
	if len(n.Channels) > 0 {
		var l []events.DynamoDBAttributeValue
		for _, c := range n.Channels {
			l = append(l, s(string(c)))
		}
		img["channels"] = events.NewListAttribute(l)
	}
	if len(n.Data) > 0 {
		data := map[string]events.DynamoDBAttributeValue{}
		for _, k := range slices.Sorted(maps.Keys(n.Data)) {
			data[k] = s(fmt.Sprint(n.Data[k]))
		}
		img["data"] = events.NewMapAttribute(data)
	}
	return events.DynamoDBEventRecord{
		EventID: "ev-" + seq, EventName: "INSERT", EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{
			SequenceNumber: seq, StreamViewType: "NEW_AND_OLD_IMAGES",
			Keys:     map[string]events.DynamoDBAttributeValue{"pk": s("N#" + n.ID), "sk": s("N")},
			NewImage: img,
		},
	}
}
