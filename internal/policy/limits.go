package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// Limits are the per-user rate limits: at most PerWindow[channel] messages to
// one user on one channel in each fixed window. The in-app inbox is never
// limited (it is not a channel).
type Limits struct {
	Window    time.Duration
	PerWindow map[domain.Channel]int // 0 or absent: unlimited
}

// DefaultLimits are DESIGN §4's: email 5/min, SMS 5/min, push 20/min.
func DefaultLimits() Limits {
	return Limits{Window: time.Minute, PerWindow: map[domain.Channel]int{
		domain.ChannelEmail: 5, domain.ChannelSMS: 5, domain.ChannelPush: 20,
	}}
}

// For is the limit of a channel; 0 means unlimited.
func (l Limits) For(c domain.Channel) int { return l.PerWindow[c] }

// WindowStart is the start of the fixed window containing t. Windows are
// aligned to the Unix epoch, so every relay instance agrees on them.
func (l Limits) WindowStart(t time.Time) time.Time { return t.UTC().Truncate(l.Window) }

// LimitEnv names the environment variable of a channel's limit, e.g.
// RATE_LIMIT_EMAIL; RATE_LIMIT_WINDOW is the window (a Go duration).
func LimitEnv(c domain.Channel) string { return "RATE_LIMIT_" + strings.ToUpper(string(c)) }

// LimitsFromEnv reads RATE_LIMIT_WINDOW and RATE_LIMIT_<CHANNEL> (messages
// per window, 0 = unlimited); unset variables keep the defaults.
func LimitsFromEnv(getenv func(string) string) (Limits, error) {
	l := DefaultLimits()
	if v := getenv("RATE_LIMIT_WINDOW"); v != "" {
		w, err := time.ParseDuration(v)
		if err != nil || w < time.Second {
			return l, fmt.Errorf("RATE_LIMIT_WINDOW %q: want a Go duration of at least 1s", v)
		}
		l.Window = w
	}
	for _, c := range domain.Channels {
		name := LimitEnv(c)
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return l, fmt.Errorf("%s %q: want a non-negative integer", name, v)
			}
			l.PerWindow[c] = n
		}
	}
	return l, nil
}

// Exempt reports whether deliveries of a type at a priority bypass rate
// limits: high priority (an OTP must not wait behind a newsletter) and
// mandatory types (security notices) always go.
func Exempt(t *catalog.Type, p domain.Priority) bool {
	return p == domain.PriorityHigh || t.Mandatory
}
