package app

import "github.com/heraldhq/herald/internal/feedback"

// NewFeedback wires the SES feedback function.
func NewFeedback(d Deps) (*feedback.Handler, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	return feedback.New(st, d.Log), nil
}
