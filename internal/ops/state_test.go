package ops

import "testing"

// A stack with an access key of its own (a shared DynamoDB Local keeps a
// database per key) gives that key to the tools it points at itself; older
// state files, without one, keep the emulators' "local".
func TestLocalStateEnvAccessKey(t *testing.T) {
	for _, tc := range []struct{ key, want string }{{"", "local"}, {"local0123abcd", "local0123abcd"}} {
		env := LocalState{Region: "us-east-1", AccessKeyID: tc.key, Endpoints: map[string]string{"DYNAMODB": "http://127.0.0.1:1"}}.Env()
		if env["AWS_ACCESS_KEY_ID"] != tc.want || env["AWS_ENDPOINT_URL_DYNAMODB"] != "http://127.0.0.1:1" {
			t.Errorf("AccessKeyID %q: env %v; want the key %q", tc.key, env, tc.want)
		}
	}
}
