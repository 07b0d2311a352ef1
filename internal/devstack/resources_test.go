package devstack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// A CreateTable the SDK retries after its first attempt made the table (an
// answer lost or late on a loaded machine) answers ResourceInUseException:
// the stack takes the table it made instead of failing to start.
func TestCreateTablesRetriedCreate(t *testing.T) {
	tmpl, err := LoadTemplate("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		created = map[string]map[string]any{}
		creates int
	)
	fail := func(w http.ResponseWriter, code int, typ string) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#`+typ+`","message":"`+typ+`"}`)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var in map[string]any
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			t.Errorf("request body: %v", err)
		}
		name, _ := in["TableName"].(string)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		switch op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810."); op {
		case "DescribeTable":
			desc, ok := created[name]
			if !ok {
				fail(w, http.StatusBadRequest, "ResourceNotFoundException")
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"Table": desc})
		case "CreateTable":
			creates++
			if _, ok := created[name]; ok {
				fail(w, http.StatusBadRequest, "ResourceInUseException")
				return
			}
			// The table is made, but the caller sees a server error and retries.
			in["TableArn"] = "arn:aws:dynamodb:" + LocalRegion + ":" + LocalAccountID + ":table/" + name
			in["LatestStreamArn"] = in["TableArn"].(string) + "/stream/1"
			if spec, ok := in["StreamSpecification"].(map[string]any); ok {
				spec["StreamEnabled"] = true
			}
			created[name] = in
			fail(w, http.StatusInternalServerError, "InternalServerError")
		case "DescribeTimeToLive", "UpdateTimeToLive":
			_, _ = io.WriteString(w, `{}`)
		default:
			t.Errorf("unexpected %s", op)
			fail(w, http.StatusBadRequest, "ValidationException")
		}
	}))
	defer srv.Close()
	db := dynamodb.New(dynamodb.Options{
		Region: LocalRegion, BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	r := &Resources{values: map[string]string{}, Queues: map[string]QueueInfo{}}
	if err := createTables(context.Background(), tmpl, db, "herald-", r); err != nil {
		t.Fatalf("createTables after a retried CreateTable: %v", err)
	}
	if creates < 2 {
		t.Fatalf("%d CreateTable requests; the fake wants the SDK to retry", creates)
	}
	if r.Table != "herald-Table" || r.values["getatt:Table.StreamArn"] == "" {
		t.Fatalf("resources %q, %v; want the table and its stream", r.Table, r.values)
	}
}
