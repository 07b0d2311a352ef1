package domain

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	one := func() float64 { return 0.999999 }
	zero := func() float64 { return 0 }
	half := func() float64 { return 0.5 }
	tests := []struct {
		name      string
		base, cap time.Duration
		n         int
		rand      func() float64
		want      time.Duration
		tolerance time.Duration
	}{
		{"first retry ceiling is base", 10 * time.Second, time.Hour, 1, one, 10 * time.Second, 100 * time.Millisecond},
		{"doubles", 10 * time.Second, time.Hour, 3, one, 40 * time.Second, 100 * time.Millisecond},
		{"capped", 10 * time.Second, 60 * time.Second, 10, one, 60 * time.Second, 100 * time.Millisecond},
		{"huge n does not overflow", time.Second, time.Minute, 200, one, time.Minute, 100 * time.Millisecond},
		{"full jitter", 10 * time.Second, time.Hour, 2, half, 10 * time.Second, 0},
		{"floor one second", 10 * time.Second, time.Hour, 1, zero, time.Second, 0},
		{"n zero treated as one", 10 * time.Second, time.Hour, 0, one, 10 * time.Second, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Backoff(tt.base, tt.cap, tt.n, tt.rand)
			if d := got - tt.want; d > tt.tolerance || d < -tt.tolerance {
				t.Fatalf("Backoff = %v, want %v", got, tt.want)
			}
		})
	}
}
