package policy

import (
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// DefaultDigestMinutes is the digest window of users who did not choose one.
const DefaultDigestMinutes = 5

// DigestWindow is how long a user's digests stay open, at most
// MaxDigestWindow (LatestDue counts on it).
func DigestWindow(u *domain.User) time.Duration {
	if u != nil && u.DigestMinutes > 0 {
		return min(time.Duration(u.DigestMinutes)*time.Minute, MaxDigestWindow)
	}
	return DefaultDigestMinutes * time.Minute
}

// DigestDue is when a digest opened at `opened` is sent: after the user's
// digest window, or at the end of the quiet hours that window ends in (a
// digest is never high priority), so a night's burst becomes one morning
// message.
func DigestDue(u *domain.User, p domain.Priority, opened time.Time) time.Time {
	due := opened.Add(DigestWindow(u))
	if p != domain.PriorityHigh {
		if end, quiet := QuietUntil(u, due); quiet {
			due = end
		}
	}
	return due
}
