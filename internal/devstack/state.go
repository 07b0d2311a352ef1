package devstack

import (
	"os"

	"github.com/heraldhq/herald/internal/ops"
)

// LocalState describes the running stack for `herald dlq` and other tools:
// the endpoints the functions use, the table, every queue and the relay
// function's environment.
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
		PID:      os.Getpid(), APIURL: s.APIURL, WebSocketURL: s.WebSocketURL, Region: LocalRegion, Table: s.Resources.Table, Queues: queues,
		Endpoints: s.endpoints(), DataDir: s.cfg.DataDir, RelayEnv: s.relayEnv(), AccessKeyID: s.accessKey,
	}
}

// relayEnv is the environment the runner gives the relay function (the
// configuration a relay DLQ redrive builds the relay with); nil when the
// template has no relay function or its environment does not resolve.
func (s *Stack) relayEnv() map[string]string {
	for _, fn := range s.Template.Functions() {
		if fn.LogicalID == ops.RelayFunctionLogicalID {
			env, err := s.functionEnv(fn)
			if err != nil {
				return nil
			}
			return env
		}
	}
	return nil
}

// endpoints are the stack's service endpoints by AWS_ENDPOINT_URL_ suffix.
func (s *Stack) endpoints() map[string]string {
	return map[string]string{
		"DYNAMODB": s.Emulators.DynamoDB, "DYNAMODB_STREAMS": s.Emulators.DynamoDB, "SQS": s.Emulators.SQS,
		"SESV2": s.Emulators.SES, "SNS": s.APIURL + "/_dev/sns",
		"PINPOINT_SMS_VOICE_V2": s.APIURL + "/_dev/sms-voice", "EVENTBRIDGE": s.APIURL + "/_dev/eventbridge",
	}
}
