package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/devstack/stacktest"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/dynamo"
)

func TestGetNotificationsReadsInBatches(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	user := uniq(t)
	var ids []string
	var ns []*domain.Notification
	for i := range 120 { // more than one BatchGetItem
		n := &domain.Notification{ID: fmt.Sprintf("%s-%03d", user, i), Type: "comment.created", Recipient: domain.Recipient{UserID: user},
			Priority: domain.PriorityLow, CreatedAt: time.Now(), Status: domain.NotificationAccepted, Data: map[string]any{"i": fmt.Sprint(i)}}
		ns = append(ns, n)
		ids = append(ids, n.ID)
	}
	// Written in bulk (five BatchWriteItems of at most 25).
	if err := s.PutNotifications(ctx, ns, 4); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetNotifications(ctx, append(ids, user+"-missing"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 120 {
		t.Fatalf("got %d notifications, want 120 (the missing one left out)", len(got))
	}
	seen := map[string]bool{}
	for _, n := range got {
		seen[n.ID] = true
		if n.Recipient.UserID != user || n.Data["i"] == nil {
			t.Errorf("decoded %+v", n)
		}
	}
	if len(seen) != 120 {
		t.Errorf("%d distinct ids", len(seen))
	}
}

// batchGetFake answers BatchGetItem from an in-memory set of notification
// ids; unprocessed decides, per call, how many of the requested keys come
// back unprocessed (DynamoDB does so under throttling or past 16 MB, which
// DynamoDB Local rarely does).
type batchGetFake struct {
	dynamo.API  // only BatchGetItem is called
	table       string
	exists      map[string]bool
	unprocessed func(call, keys int) int
	err         error

	mu    sync.Mutex
	calls []int // keys per call
}

func (f *batchGetFake) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ka := in.RequestItems[f.table]
	f.calls = append(f.calls, len(ka.Keys))
	if len(in.RequestItems) != 1 || len(ka.Keys) > 100 {
		return nil, fmt.Errorf("fake: request over %d tables, %d keys", len(in.RequestItems), len(ka.Keys))
	}
	if !aws.ToBool(ka.ConsistentRead) {
		return nil, errors.New("fake: the retry lost the read's consistency")
	}
	if f.err != nil {
		return nil, f.err
	}
	n := 0
	if f.unprocessed != nil {
		n = f.unprocessed(len(f.calls), len(ka.Keys))
	}
	served, left := ka.Keys[:len(ka.Keys)-n], ka.Keys[len(ka.Keys)-n:]
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	for _, k := range served {
		pk := k["pk"].(*types.AttributeValueMemberS).Value
		if id := strings.TrimPrefix(pk, "N#"); f.exists[id] {
			out.Responses[f.table] = append(out.Responses[f.table], map[string]types.AttributeValue{
				"pk": k["pk"], "sk": k["sk"], "id": &types.AttributeValueMemberS{Value: id},
			})
		}
	}
	if n > 0 {
		rest := ka
		rest.Keys = left
		out.UnprocessedKeys = map[string]types.KeysAndAttributes{f.table: rest}
	}
	return out, nil
}

func TestBatchGetChunksAndRetriesUnprocessedKeys(t *testing.T) {
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("n%03d", i)
		}
		return out
	}
	tests := []struct {
		name        string
		keys        int
		missing     int // the last ids have no item
		unprocessed func(call, keys int) int
		err         error
		cancel      bool
		wantCalls   string
		wantItems   int
		wantErr     string
	}{
		{name: "one call", keys: 7, wantCalls: "[7]", wantItems: 7},
		{name: "exactly one batch", keys: 100, wantCalls: "[100]", wantItems: 100},
		{name: "chunks of 100", keys: 250, missing: 20, wantCalls: "[100 100 50]", wantItems: 230},
		{name: "unprocessed keys are retried until read", keys: 150,
			unprocessed: func(call, keys int) int {
				if call == 1 || call == 2 { // the first chunk comes back piecemeal
					return keys / 2
				}
				return 0
			},
			wantCalls: "[100 50 25 50]", wantItems: 150},
		{name: "a key unprocessed five times fails", keys: 3,
			unprocessed: func(call, keys int) int { return 1 },
			wantCalls:   "[3 1 1 1 1]", wantErr: "still unprocessed after 5 attempts"},
		{name: "a failed call fails", keys: 3, err: errors.New("throttled"), wantCalls: "[3]", wantErr: "throttled"},
		{name: "cancellation ends the backoff", keys: 3, cancel: true,
			unprocessed: func(call, keys int) int { return 1 },
			wantCalls:   "[3]", wantErr: context.Canceled.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := ids(tt.keys)
			f := &batchGetFake{table: "t", exists: map[string]bool{}, unprocessed: tt.unprocessed, err: tt.err}
			for _, id := range all[:tt.keys-tt.missing] {
				f.exists[id] = true
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			got, err := stacktest.NewStores(dynamo.New(f, "t")).GetNotifications(ctx, all)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if calls := fmt.Sprint(f.calls); calls != tt.wantCalls {
				t.Errorf("calls with %s keys, want %s", calls, tt.wantCalls)
			}
			if tt.wantErr == "" {
				seen := map[string]bool{}
				for _, n := range got {
					seen[n.ID] = true
				}
				if len(got) != tt.wantItems || len(seen) != tt.wantItems {
					t.Errorf("%d notifications (%d distinct), want %d", len(got), len(seen), tt.wantItems)
				}
			}
		})
	}
}
