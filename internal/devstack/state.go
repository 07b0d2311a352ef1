package devstack

import (
	"os"

	"github.com/heraldhq/herald/internal/ops"
)

// LocalState describes the running stack for `herald dlq` and other tools:
// the endpoints the functions use, the table and every queue.
func (s *Stack) LocalState() ops.LocalState {
	queues := map[string]string{}
	for id, q := range s.Resources.Queues {
		queues[id] = q.URL
	}
	bus := ""
	if s.Bus != nil {
		bus = s.Bus.Name
	}
	return ops.LocalState{
		EventBus: bus,
		PID:      os.Getpid(), APIURL: s.APIURL, Region: LocalRegion, Table: s.Resources.Table, Queues: queues,
		Endpoints: s.endpoints(), DataDir: s.cfg.DataDir,
	}
}

// endpoints are the stack's service endpoints by AWS_ENDPOINT_URL_ suffix.
func (s *Stack) endpoints() map[string]string {
	return map[string]string{
		"DYNAMODB": s.Emulators.DynamoDB, "DYNAMODB_STREAMS": s.Emulators.DynamoDB, "SQS": s.Emulators.SQS,
		"SESV2": s.Emulators.SES, "SNS": s.APIURL + "/_dev/sns", "EVENTBRIDGE": s.APIURL + "/_dev/eventbridge",
	}
}
