package domain

import (
	"hash/fnv"
	"time"
)

// Topics: a topic ("thread:42") is a set of subscribed users that one send
// notifies. Topics belong to the stack, like users: every caller naming the
// same key means the same topic.

// MaxTopicLength bounds a topic key.
const MaxTopicLength = 128

// TopicShards is how many shards a topic's subscribers are spread over
// (by the user id's FNV-1a hash): a topic send reads them in parallel, one
// scan of the campaign machinery per shard, and no partition holds more
// than a sixteenth of a topic.
const TopicShards = 16

// TopicShard is the shard of a user's subscriptions: the FNV-1a hash of
// the user id mod TopicShards.
func TopicShard(userID string) int {
	h := fnv.New32a()
	h.Write([]byte(userID))
	return int(h.Sum32() % TopicShards)
}

// MaxTopicExclude bounds the users a topic send leaves out (the actor).
const MaxTopicExclude = 100

// ValidTopic reports whether key is 1–MaxTopicLength characters of
// letters, digits and ._:|- (ASCII only: no control, bidi or other
// characters that render differently from what they are).
func ValidTopic(key string) bool {
	if key == "" || len(key) > MaxTopicLength {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.' || c == '_' || c == ':' || c == '|' || c == '-':
		default:
			return false
		}
	}
	return true
}

// Subscription is one user's subscription to one topic.
type Subscription struct {
	Topic  string
	UserID string
	// Muted: the user gets nothing from the topic's sends (types that are
	// mandatory excepted).
	Muted        bool
	SubscribedAt time.Time
}
