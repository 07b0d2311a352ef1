package catalog

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/domain"
)

// Escalation is one external channel's rule beside the inbox: when the
// channel is due and what makes it unnecessary by then. The zero value
// sends at once, unconditionally.
type Escalation struct {
	// After delays the channel from acceptance.
	After time.Duration
	// UnlessActiveWithin skips the channel when the user's app was seen
	// within this long before the send (outcome skipped: active_in_app).
	UnlessActiveWithin time.Duration
	// UnlessRead drops the channel when the inbox item has been read or
	// archived by the send (outcome dropped: read_in_app).
	UnlessRead bool
}

// Conditional reports whether the send depends on what the user did.
func (e Escalation) Conditional() bool { return e.UnlessActiveWithin > 0 || e.UnlessRead }

// MaxEscalationDelay bounds after and unlessActiveWithin: escalation is
// about minutes to hours, and a delayed channel must still fall inside a
// notification's retention.
const MaxEscalationDelay = 7 * 24 * time.Hour

// EscalationOf returns the channel's rule (zero: at once, unconditionally).
func (t *Type) EscalationOf(c domain.Channel) Escalation { return t.Escalations[c] }

// fileEscalation is the YAML shape of one channel's rule.
type fileEscalation struct {
	After              string `yaml:"after"`
	UnlessActiveWithin string `yaml:"unlessActiveWithin"`
	UnlessRead         bool   `yaml:"unlessRead"`
}

func (t *Type) parseEscalation(f map[string]fileEscalation) error {
	if len(f) == 0 {
		return nil
	}
	t.Escalations = make(map[domain.Channel]Escalation, len(f))
	for name, fe := range f {
		ch, err := domain.ParseChannel(name)
		if err != nil {
			return fmt.Errorf("escalation: %w", err)
		}
		if !slices.Contains(t.Channels, ch) {
			return fmt.Errorf("escalation: channel %s is not one of the type's channels", ch)
		}
		var e Escalation
		if e.After, err = escalationDuration(fe.After); err != nil {
			return fmt.Errorf("escalation %s after: %w", ch, err)
		}
		if e.UnlessActiveWithin, err = escalationDuration(fe.UnlessActiveWithin); err != nil {
			return fmt.Errorf("escalation %s unlessActiveWithin: %w", ch, err)
		}
		e.UnlessRead = fe.UnlessRead
		if e == (Escalation{}) {
			return fmt.Errorf("escalation %s: empty rule", ch)
		}
		if e.Conditional() && t.Digestible {
			// A digest stands for many inbox items: "read" and the moment
			// to compare presence with are not defined for it.
			return fmt.Errorf("escalation %s: unlessActiveWithin/unlessRead are not allowed on a digestible type", ch)
		}
		t.Escalations[ch] = e
	}
	return nil
}

var errEscalationDuration = errors.New("must be a positive duration of at most 168h")

func escalationDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > MaxEscalationDelay {
		return 0, fmt.Errorf("%q %w", s, errEscalationDuration)
	}
	return d, nil
}

// lintEscalation: a mandatory or high-priority type must reach the user
// outside the app, so at least one of its external channels may not be
// conditional on presence or read state (the rule is about the only
// external channel; a type whose every external channel is conditional can
// miss the user the same way).
func (t *Type) lintEscalation() []error {
	if !t.Mandatory && t.Priority != domain.PriorityHigh {
		return nil
	}
	for _, ch := range t.Channels {
		if !t.EscalationOf(ch).Conditional() {
			return nil
		}
	}
	if len(t.Channels) == 1 {
		return []error{fmt.Errorf("%s escalation.%s: unlessActiveWithin/unlessRead on the only external channel of a mandatory or high-priority type", t.Name, t.Channels[0])}
	}
	return []error{fmt.Errorf("%s escalation: unlessActiveWithin/unlessRead on every external channel (%v) of a mandatory or high-priority type; keep one unconditional", t.Name, t.Channels)}
}
