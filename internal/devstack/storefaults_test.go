package devstack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// TestStoreFaultsFailTheArmedCallOnce: a run records its calls with their
// ordinals; the armed one fails once, before the request (refused) or after
// the service answered (answer lost); calls naming an earlier run's key are
// neither counted nor failed; nothing is recorded before a run begins.
func TestStoreFaultsFailTheArmedCallOnce(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{"MessageId":"m","MD5OfMessageBody":"ignored"}`))
	}))
	defer srv.Close()
	f := NewStoreFaults()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL),
		RetryMaxAttempts: 1, APIOptions: []func(*middleware.Stack) error{f.Middleware("RelayFunction")}}
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.DisableMessageChecksumValidation = true })
	send := func(body string) error {
		_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(srv.URL + "/q"), MessageBody: aws.String(body)})
		return err
	}
	if err := send("before any run"); err != nil {
		t.Fatal(err)
	}
	if got := f.Calls(); len(got) != 0 {
		t.Fatalf("recorded before a run: %v", got)
	}

	f.Begin("run1")
	second := StoreCall{Function: "RelayFunction", Operation: "SQS.SendMessage", N: 2}
	f.Arm(second, StoreFaultRefused)
	before := requests.Load()
	errs := []error{send("run1 a"), send("run1 b"), send("run1 c")}
	var apiErr smithy.APIError
	if errs[0] != nil || errs[2] != nil || !errors.As(errs[1], &apiErr) || apiErr.ErrorCode() != "InternalError" {
		t.Fatalf("errors %v, want the second call only to fail with SQS's InternalError", errs)
	}
	if n := requests.Load() - before; n != 2 {
		t.Errorf("%d requests, want 2: a refused call is not sent", n)
	}
	if got := f.Served(); len(got) != 1 || got[0] != second {
		t.Errorf("served %v, want %v", got, second)
	}
	if got := f.Calls(); len(got) != 3 || got[2].N != 3 {
		t.Errorf("calls %v, want three numbered 1-3", got)
	}

	f.Begin("run2")
	f.Arm(StoreCall{Function: "RelayFunction", Operation: "SQS.SendMessage", N: 1}, StoreFaultAnswerLost)
	before = requests.Load()
	if err := send("a late duplicate of run1"); err != nil {
		t.Fatalf("an earlier run's call failed: %v", err)
	}
	if err := send("run2"); err == nil {
		t.Fatal("the armed call succeeded")
	}
	if n := requests.Load() - before; n != 2 {
		t.Errorf("%d requests, want 2: an answer-lost call is sent", n)
	}
	if got := f.Calls(); len(got) != 1 {
		t.Errorf("calls %v, want run2's only", got)
	}
}
