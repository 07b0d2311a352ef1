// Package feedbackfn wires the SES feedback function.
package feedbackfn

import (
	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/feedback"
)

var _ feedback.Store = (*dynamo.Store)(nil)

// New wires the SES feedback function.
func New(d app.Deps) (*feedback.Handler, error) {
	st, err := d.Store()
	if err != nil {
		return nil, err
	}
	return feedback.New(feedback.Deps{Store: st, Log: d.Log, Metrics: d.Recorder()}), nil
}
