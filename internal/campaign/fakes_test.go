package campaign

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/storetest"
)

// fakeStore is the table in memory, with the conditional semantics the
// handler relies on (conditional puts, versioned lot results).
type fakeStore struct {
	mu            sync.Mutex
	campaigns     map[string]*domain.Campaign
	chunks        map[string][]string // campaign/chunk → ids
	chunkOrder    []string            // chunk keys in order (one campaign)
	lots          map[string]*domain.CampaignLot
	profiles      map[string]bool
	notifications map[string]*domain.Notification
	deliveries    *storetest.MemDeliveries // its contract suite runs in internal/storetest
	creates       int                      // CreateNotification calls that wrote
	failCreate    error                    // CreateNotification answers it when set
	finished      int
	finishAt      time.Time // FinishCampaign's clock (zero: time.Now)
	// Segment campaigns: recorded scan segments, segments scanned, and
	// each stored page's continuation.
	scanSegments map[string]int
	scanned      map[string]map[int]bool
	pageNext     map[string]string // campaign/chunk → next
	scans        int               // ScanProfiles calls
	planReads    int               // ReadPlanning calls (a reconcile's recount)
	topics       *storetest.MemTopics
}

var _ Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{campaigns: map[string]*domain.Campaign{}, chunks: map[string][]string{}, lots: map[string]*domain.CampaignLot{},
		profiles: map[string]bool{}, notifications: map[string]*domain.Notification{}, deliveries: storetest.NewMemDeliveries(nil),
		scanSegments: map[string]int{}, scanned: map[string]map[int]bool{}, pageNext: map[string]string{},
		topics: storetest.NewMemTopics(time.Now)}
}

func (s *fakeStore) addChunk(c *domain.Campaign, chunk string, ids ...string) {
	s.chunks[c.ID+"/"+chunk] = ids
	s.chunkOrder = append(s.chunkOrder, chunk)
	slices.Sort(s.chunkOrder)
	c.Chunks++
	c.Recipients += len(ids)
}

func (s *fakeStore) GetCampaign(_ context.Context, id string) (*domain.Campaign, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.campaigns[id]
	if !ok {
		return nil, fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	}
	cp := *c
	cp.Data = nil // as the store: META holds no data
	return &cp, nil
}

func (s *fakeStore) GetCampaignData(_ context.Context, id string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.campaigns[id]
	if !ok {
		return nil, fmt.Errorf("campaign %s: %w", id, domain.ErrNotFound)
	}
	return c.Data, nil
}

func (s *fakeStore) ListChunks(_ context.Context, _ string, after string, limit int) ([]string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, k := range s.chunkOrder {
		if k > after || after == "" {
			out = append(out, k)
		}
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

func (s *fakeStore) GetChunk(_ context.Context, id, chunk string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, ok := s.chunks[id+"/"+chunk]
	if !ok {
		return nil, domain.ErrNotFound
	}
	return ids, nil
}

func (s *fakeStore) GetLot(_ context.Context, id, chunk string) (*domain.CampaignLot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lots[id+"/"+chunk]
	if !ok {
		return nil, domain.ErrNotFound
	}
	cp := *l
	cp.Pending = slices.Clone(l.Pending)
	return &cp, nil
}

func (s *fakeStore) ExistingProfiles(_ context.Context, users []string) (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, u := range users {
		if s.profiles[u] {
			out[u] = true
		}
	}
	return out, nil
}

func (s *fakeStore) CreateNotification(_ context.Context, n *domain.Notification) (*domain.Notification, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failCreate != nil {
		return nil, s.failCreate
	}
	if existing, ok := s.notifications[n.ID]; ok {
		return existing, domain.ErrConflict
	}
	s.notifications[n.ID] = n
	s.creates++
	return n, nil
}

func (s *fakeStore) GetNotification(_ context.Context, id string) (*domain.Notification, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.notifications[id]
	if !ok {
		return nil, fmt.Errorf("notification %s: %w", id, domain.ErrNotFound)
	}
	return n, nil
}

func (s *fakeStore) Transition(ctx context.Context, id string, ch domain.Channel, c domain.Change) (*domain.Delivery, error) {
	return s.deliveries.Transition(ctx, id, ch, c)
}

func (s *fakeStore) apply(id string, delta domain.CampaignCounts, settled bool) {
	c := s.campaigns[id]
	c.Counts = c.Counts.Add(delta)
	if settled {
		c.LotsSettled++
	}
}

func (s *fakeStore) RecordLot(_ context.Context, id string, lot *domain.CampaignLot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.lots[id+"/"+lot.Chunk]; ok {
		return domain.ErrConflict
	}
	cp := *lot
	cp.Version = 1
	s.lots[id+"/"+lot.Chunk] = &cp
	lot.Version = 1
	s.apply(id, lot.Counts, lot.Settled())
	return nil
}

func (s *fakeStore) ReconcileLot(_ context.Context, id string, prev, next *domain.CampaignLot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.lots[id+"/"+next.Chunk]
	if cur == nil || cur.Version != prev.Version {
		return domain.ErrConflict
	}
	cp := *next
	cp.Version = prev.Version + 1
	s.lots[id+"/"+next.Chunk] = &cp
	next.Version = cp.Version
	s.apply(id, next.Counts.Sub(prev.Counts), next.Settled() && !prev.Settled())
	return nil
}

func (s *fakeStore) ReadPlanning(_ context.Context, keys []domain.DeliveryKey, _ []string) (map[domain.DeliveryKey]domain.Delivery, map[string]*domain.RecipientProfile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.planReads++
	out := map[domain.DeliveryKey]domain.Delivery{}
	for _, k := range keys {
		if d, ok := s.deliveries.Get(k.NotificationID, k.Channel); ok {
			out[k] = d
		}
	}
	return out, nil, nil
}

func (s *fakeStore) FinishCampaign(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.campaigns[id]
	if !c.Settled() || !c.FinishedAt.IsZero() {
		return false, nil
	}
	if n, ok := s.scanSegments[id]; ok && len(s.scanned[id]) < n {
		return false, nil
	}
	if c.Status == domain.CampaignRunning {
		c.Status = domain.CampaignDone
	}
	c.FinishedAt = time.Now()
	if !s.finishAt.IsZero() {
		c.FinishedAt = s.finishAt
	}
	s.finished++
	return true, nil
}

func (s *fakeStore) SetScanSegments(_ context.Context, id string, n int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.scanSegments[id]; !ok {
		s.scanSegments[id] = n
	}
	return s.scanSegments[id], nil
}

// ScanProfiles places each profile in segment hash(id) % total and pages
// through a segment in id order, as a parallel scan covers every item once.
func (s *fakeStore) ScanProfiles(_ context.Context, seg, total int, after string, limit int) ([]string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scans++
	var in []string
	for u := range s.profiles {
		h := fnv.New32a()
		h.Write([]byte(u))
		if int(h.Sum32()%uint32(total)) == seg && u > after {
			in = append(in, u)
		}
	}
	slices.Sort(in)
	if len(in) > limit {
		return in[:limit], in[limit-1], nil
	}
	return in, "", nil
}

func (s *fakeStore) ScanSubscribers(ctx context.Context, topic string, shard int, after string, limit int) ([]string, string, error) {
	subs, next, err := s.topics.TopicSubscribers(ctx, topic, shard, after, limit)
	ids := make([]string, len(subs))
	for i, sub := range subs {
		ids[i] = sub.UserID
	}
	return ids, next, err
}

func (s *fakeStore) MutedSubscribers(ctx context.Context, topic string, users []string) (map[string]bool, error) {
	return s.topics.MutedSubscribers(ctx, topic, users)
}

func (s *fakeStore) GetScanPage(_ context.Context, id, chunk string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, ok := s.pageNext[id+"/"+chunk]
	return next, ok, nil
}

func (s *fakeStore) RecordScanPage(_ context.Context, c *domain.Campaign, chunk string, seg int, ids []string, next string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored := s.campaigns[c.ID]
	if len(ids) > 0 {
		if _, ok := s.pageNext[c.ID+"/"+chunk]; ok {
			return domain.ErrConflict
		}
		s.pageNext[c.ID+"/"+chunk] = next
		s.chunks[c.ID+"/"+chunk] = ids
		stored.Chunks++
		stored.Recipients += len(ids)
	}
	if next == "" {
		if s.scanned[c.ID] == nil {
			s.scanned[c.ID] = map[int]bool{}
		}
		s.scanned[c.ID][seg] = true
	}
	return nil
}

// fakeQueue records what was sent.
type fakeQueue struct {
	mu     sync.Mutex
	sent   []domain.CampaignMessage
	delays []time.Duration
}

func (q *fakeQueue) SendCampaign(_ context.Context, msgs []domain.CampaignMessage, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range msgs {
		q.sent = append(q.sent, m)
		q.delays = append(q.delays, delay)
	}
	return nil
}

func (q *fakeQueue) take() []domain.CampaignMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.sent
	q.sent, q.delays = nil, nil
	return out
}

type fakeVisibility struct {
	mu  sync.Mutex
	set map[string]time.Duration
}

func (v *fakeVisibility) SetVisibility(_ context.Context, _, receipt string, d time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.set == nil {
		v.set = map[string]time.Duration{}
	}
	v.set[receipt] = d
	return nil
}
