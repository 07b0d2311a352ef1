// Package feedbackfn wires the SES feedback function.
package feedbackfn

import (
	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/dynamo"
	"github.com/heraldhq/herald/internal/feedback"
)

// store is the feedback handler's table: deliveries it ends and the
// suppressions it records.
type store struct {
	*dynamo.Notifications
	*dynamo.Users
}

var _ feedback.Store = store{}

// New wires the SES feedback function.
func New(d app.Deps) (*feedback.Handler, error) {
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	return feedback.New(feedback.Deps{Store: store{st.Notifications, st.Users}, Log: d.Log, Metrics: d.Recorder()}), nil
}
