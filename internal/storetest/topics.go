package storetest

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// TopicStore is the topic subscriptions' store (the DynamoDB adapter's
// dynamo.Topics; MemTopics).
type TopicStore interface {
	SubscribeToTopic(ctx context.Context, topic string, users []string) (added int, err error)
	UnsubscribeFromTopic(ctx context.Context, topic, userID string) error
	TopicSubscribers(ctx context.Context, topic string, shard int, after string, limit int) ([]domain.Subscription, string, error)
	UserTopics(ctx context.Context, userID, after string, limit int) ([]domain.Subscription, string, error)
	SetTopicMuted(ctx context.Context, userID, topic string, muted bool) (*domain.Subscription, error)
	MutedSubscribers(ctx context.Context, topic string, users []string) (map[string]bool, error)
}

// TopicContract: subscribing twice stores once and keeps a mute; a topic's
// subscribers are spread over domain.TopicShards shards, each paged in
// user order, every subscriber in exactly the shard domain.TopicShard
// names; a user's topics page in topic order; a mute shows on both sides
// and is domain.ErrNotFound for a user not subscribed; unsubscribing
// removes both sides and is idempotent. Topics and users are this run's
// own (the table may be shared).
func TopicContract(t *testing.T, newStore func(t *testing.T) TopicStore) {
	ctx := context.Background()
	t.Run("subscribe twice stores once", func(t *testing.T) {
		s := newStore(t)
		topic := "thread:" + newID("topic")
		users := make([]string, 40)
		for i := range users {
			users[i] = newID("sub")
		}
		if added, err := s.SubscribeToTopic(ctx, topic, users); err != nil || added != len(users) {
			t.Fatalf("subscribe: %d, %v; want %d", added, err, len(users))
		}
		if _, err := s.SetTopicMuted(ctx, users[0], topic, true); err != nil {
			t.Fatal(err)
		}
		// Again, with one new user and a repeat inside the call.
		extra := newID("sub")
		if added, err := s.SubscribeToTopic(ctx, topic, append(slices.Clone(users), extra, extra)); err != nil || added != 1 {
			t.Fatalf("subscribe again: %d, %v; want 1 added", added, err)
		}
		all := append(slices.Clone(users), extra)
		got := allSubscribers(t, s, topic, 7)
		if len(got) != len(all) {
			t.Fatalf("%d subscribers stored, want %d (each once)", len(got), len(all))
		}
		for _, u := range all {
			sub, ok := got[u]
			if !ok {
				t.Fatalf("%s not listed", u)
			}
			if sub.Muted != (u == users[0]) || sub.Topic != topic || sub.SubscribedAt.IsZero() {
				t.Errorf("%s: %+v (a second subscribe keeps the mute)", u, sub)
			}
		}
	})
	t.Run("a user's topics", func(t *testing.T) {
		s := newStore(t)
		user := newID("follower")
		base := newID("t")
		topics := []string{base + ":c", base + ":a", base + ":b", base + ":d", base + ":e"}
		for _, tp := range topics {
			if _, err := s.SubscribeToTopic(ctx, tp, []string{user}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.SetTopicMuted(ctx, user, base+":b", true); err != nil {
			t.Fatal(err)
		}
		var got []string
		after, pages := "", 0
		for {
			subs, next, err := s.UserTopics(ctx, user, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if pages++; pages > 10 || len(subs) > 2 {
				t.Fatalf("page %d: %d topics (limit 2)", pages, len(subs))
			}
			for _, sub := range subs {
				got = append(got, sub.Topic)
				if sub.UserID != user || sub.Muted != (sub.Topic == base+":b") {
					t.Errorf("%+v", sub)
				}
			}
			if next == "" {
				break
			}
			after = next
		}
		want := slices.Clone(topics)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("topics %v, want %v (in order)", got, want)
		}
		if subs, _, err := s.UserTopics(ctx, newID("nobody"), "", 10); err != nil || len(subs) != 0 {
			t.Errorf("a user with no topics: %v, %v", subs, err)
		}
	})
	t.Run("mute and unsubscribe", func(t *testing.T) {
		s := newStore(t)
		topic := newID("topic")
		a, b, c := newID("u"), newID("u"), newID("u")
		if _, err := s.SubscribeToTopic(ctx, topic, []string{a, b}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetTopicMuted(ctx, c, topic, true); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("mute without a subscription: %v, want ErrNotFound", err)
		}
		sub, err := s.SetTopicMuted(ctx, a, topic, true)
		if err != nil || !sub.Muted || sub.UserID != a || sub.Topic != topic {
			t.Fatalf("mute: %+v, %v", sub, err)
		}
		muted, err := s.MutedSubscribers(ctx, topic, []string{a, b, c})
		if err != nil || !maps1(muted, a) {
			t.Fatalf("muted %v, %v; want only %s", muted, err, a)
		}
		if got := allSubscribers(t, s, topic, 100); !got[a].Muted || got[b].Muted {
			t.Errorf("subscribers %+v: the mute shows on the topic's side", got)
		}
		if sub, err := s.SetTopicMuted(ctx, a, topic, false); err != nil || sub.Muted {
			t.Fatalf("unmute: %+v, %v", sub, err)
		}
		if muted, _ := s.MutedSubscribers(ctx, topic, []string{a}); len(muted) != 0 {
			t.Errorf("unmuted, still %v", muted)
		}
		for range 2 { // idempotent
			if err := s.UnsubscribeFromTopic(ctx, topic, a); err != nil {
				t.Fatal(err)
			}
		}
		if got := allSubscribers(t, s, topic, 100); len(got) != 1 || got[b].UserID != b {
			t.Errorf("after unsubscribe: %+v", got)
		}
		if subs, _, _ := s.UserTopics(ctx, a, "", 10); len(subs) != 0 {
			t.Errorf("the user's side still lists %+v", subs)
		}
		if _, err := s.SetTopicMuted(ctx, a, topic, true); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("mute after unsubscribe: %v", err)
		}
	})
}

func maps1(m map[string]bool, only string) bool { return len(m) == 1 && m[only] }

// allSubscribers pages through every shard of topic, limit a page, and
// checks the order and the shard of each subscriber.
func allSubscribers(t *testing.T, s TopicStore, topic string, limit int) map[string]domain.Subscription {
	t.Helper()
	out := map[string]domain.Subscription{}
	for shard := range domain.TopicShards {
		after, pages := "", 0
		for {
			subs, next, err := s.TopicSubscribers(context.Background(), topic, shard, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			if pages++; pages > 1000 || len(subs) > limit {
				t.Fatalf("shard %d page %d: %d subscribers (limit %d)", shard, pages, len(subs), limit)
			}
			for _, sub := range subs {
				if sub.UserID <= after {
					t.Fatalf("shard %d: %s after %s: not in order", shard, sub.UserID, after)
				}
				if got := domain.TopicShard(sub.UserID); got != shard {
					t.Fatalf("%s listed in shard %d, its shard is %d", sub.UserID, shard, got)
				}
				if _, dup := out[sub.UserID]; dup {
					t.Fatalf("%s listed twice", sub.UserID)
				}
				out[sub.UserID] = sub
				after = sub.UserID
			}
			if next == "" {
				break
			}
			after = next
		}
	}
	return out
}

// MemTopics is an in-memory TopicStore (the handler packages' fake).
type MemTopics struct {
	mu   sync.Mutex
	now  func() time.Time
	subs map[string]map[string]domain.Subscription // topic → user → subscription
}

// NewMemTopics returns an empty MemTopics on the clock now.
func NewMemTopics(now func() time.Time) *MemTopics {
	return &MemTopics{now: now, subs: map[string]map[string]domain.Subscription{}}
}

// SubscribeToTopic adds the users not subscribed yet.
func (m *MemTopics) SubscribeToTopic(_ context.Context, topic string, users []string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.subs[topic] == nil {
		m.subs[topic] = map[string]domain.Subscription{}
	}
	added := 0
	for _, u := range users {
		if _, ok := m.subs[topic][u]; !ok {
			m.subs[topic][u] = domain.Subscription{Topic: topic, UserID: u, SubscribedAt: m.now()}
			added++
		}
	}
	return added, nil
}

// UnsubscribeFromTopic removes the subscription if any.
func (m *MemTopics) UnsubscribeFromTopic(_ context.Context, topic, userID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.subs[topic], userID)
	return nil
}

// TopicSubscribers pages one shard in user order.
func (m *MemTopics) TopicSubscribers(_ context.Context, topic string, shard int, after string, limit int) ([]domain.Subscription, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []domain.Subscription
	for u, sub := range m.subs[topic] {
		if domain.TopicShard(u) == shard && u > after {
			all = append(all, sub)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].UserID < all[j].UserID })
	if len(all) <= limit {
		return all, "", nil
	}
	return all[:limit], all[limit-1].UserID, nil
}

// UserTopics pages a user's subscriptions in topic order.
func (m *MemTopics) UserTopics(_ context.Context, userID, after string, limit int) ([]domain.Subscription, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []domain.Subscription
	for topic, subs := range m.subs {
		if sub, ok := subs[userID]; ok && topic > after {
			all = append(all, sub)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Topic < all[j].Topic })
	if len(all) <= limit {
		return all, "", nil
	}
	return all[:limit], all[limit-1].Topic, nil
}

// SetTopicMuted sets the mute of an existing subscription.
func (m *MemTopics) SetTopicMuted(_ context.Context, userID, topic string, muted bool) (*domain.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sub, ok := m.subs[topic][userID]
	if !ok {
		return nil, domain.ErrNotFound
	}
	sub.Muted = muted
	m.subs[topic][userID] = sub
	return &sub, nil
}

// MutedSubscribers reports which of users muted topic.
func (m *MemTopics) MutedSubscribers(_ context.Context, topic string, users []string) (map[string]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]bool{}
	for _, u := range users {
		if m.subs[topic][u].Muted {
			out[u] = true
		}
	}
	return out, nil
}

// Subscribers lists a topic's subscribers in user order (tests).
func (m *MemTopics) Subscribers(topic string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for u := range m.subs[topic] {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}
