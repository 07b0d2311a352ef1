package domain

import "time"

// Backoff is the retry delay before receive n+1 of a work message: full jitter
// over min(cap, base·2^(n-1)), where n is the message's ApproximateReceiveCount
// (n ≥ 1). rand returns a value in [0, 1). The result is at least one second,
// SQS's visibility granularity.
func Backoff(base, cap time.Duration, n int, rand func() float64) time.Duration {
	if n < 1 {
		n = 1
	}
	ceiling := cap
	if n-1 < 62 {
		if d := base << (n - 1); d > 0 && d < cap {
			ceiling = d
		}
	}
	d := time.Duration(rand() * float64(ceiling))
	if d < time.Second {
		d = time.Second
	}
	return d
}
