package devstack

import (
	"sync"
	"time"
)

// Clock is the runner's time: the wall clock plus an adjustable offset, so
// tests can jump past quiet hours or a sendAt without sleeping. The emulators
// keep real time (SQS visibility still elapses for real).
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is time.Now shifted by the offset.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Offset returns the current offset.
func (c *Clock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset
}
