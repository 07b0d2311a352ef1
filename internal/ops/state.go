package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StateFile is where `herald dev` describes the running local stack,
// relative to the repository root (.herald/ is git-ignored).
const StateFile = ".herald/dev.json"

// LocalState describes a running local stack, so that `herald dlq` can find
// it without flags.
type LocalState struct {
	// PID is the `herald dev` process; the state is stale when it is gone.
	PID    int    `json:"pid"`
	APIURL string `json:"apiUrl"`
	// WebSocketURL is the live inbox's WebSocket API (the WebSocketUrl
	// output's local twin; "" without one).
	WebSocketURL string `json:"websocketUrl,omitempty"`
	Region       string `json:"region"`
	// Endpoints maps service identifiers as in AWS_ENDPOINT_URL_<SERVICE>
	// (DYNAMODB, DYNAMODB_STREAMS, SQS, SESV2, SNS) to emulator URLs.
	Endpoints map[string]string `json:"endpoints"`
	Table     string            `json:"table"`
	// Queues maps template logical ids to local queue URLs.
	Queues map[string]string `json:"queues"`
	// EventBus is the local event bus's name ("" without one).
	EventBus string `json:"eventBus,omitempty"`
	// Logs is the file holding the functions' and emulators' logs ("" when
	// they go to the terminal); DataDir the HERALD_DEV_DATA directory ("":
	// state in memory).
	Logs    string `json:"logs,omitempty"`
	DataDir string `json:"dataDir,omitempty"`
	// RelayEnv is the environment the runner gives the relay function (the
	// template's values resolved locally, with the stack's overrides), so
	// that a relay DLQ redrive builds the relay as the runner does.
	RelayEnv map[string]string `json:"relayEnv,omitempty"`
	// AccessKeyID is the emulators' static access key ("" is "local"). A
	// stack keeping its tables in a DynamoDB Local it shares has its own:
	// that DynamoDB Local keeps a database per access key.
	AccessKeyID string `json:"accessKeyId,omitempty"`
}

// WriteState writes st to root/.herald/dev.json and returns the path.
func WriteState(root string, st LocalState) (string, error) {
	p := filepath.Join(root, StateFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("local stack state: %w", err)
	}
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return "", err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("local stack state: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("local stack state: %w", err)
	}
	return p, nil
}

// ReadState reads a state file.
func ReadState(path string) (LocalState, error) {
	var st LocalState
	raw, err := os.ReadFile(path)
	if err != nil {
		return st, fmt.Errorf("local stack state: %w", err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("local stack state %s: %w", path, err)
	}
	return st, nil
}

// FindState looks for .herald/dev.json in dir and its parents.
func FindState(dir string) (string, bool) {
	for {
		p := filepath.Join(dir, StateFile)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Env is the process environment that points the AWS SDK at the local
// stack: endpoint variables, region, and the emulators' static credentials.
func (st LocalState) Env() map[string]string {
	key := st.AccessKeyID
	if key == "" {
		key = "local"
	}
	env := map[string]string{
		"AWS_REGION": st.Region, "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_EC2_METADATA_DISABLED": "true",
	}
	for svc, u := range st.Endpoints {
		env["AWS_ENDPOINT_URL_"+svc] = u
	}
	return env
}

// Target is the local stack as a deployment.
func (st LocalState) Target() (Target, error) {
	t, err := TargetFromURLs(st.Table, st.Queues)
	if err != nil {
		return Target{}, fmt.Errorf("local stack state: %w", err)
	}
	t.EventBus = st.EventBus
	t.Relay = st.RelayEnv
	return t, nil
}

// ErrStaleState reports a state file whose `herald dev` is no longer running.
var ErrStaleState = errors.New("stale local stack state")
