package devstack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestLoadSecrets(t *testing.T) {
	t.Run("without a data directory, fresh each time", func(t *testing.T) {
		a, err := loadSecrets("")
		if err != nil {
			t.Fatal(err)
		}
		b, err := loadSecrets("")
		if err != nil {
			t.Fatal(err)
		}
		if a.VAPID.PrivateKey == "" || a.UnsubscribeSecret == "" || a.VAPID == b.VAPID || a.UnsubscribeSecret == b.UnsubscribeSecret {
			t.Fatalf("want two distinct complete secrets, got %+v and %+v", a.VAPID.PublicKey, b.VAPID.PublicKey)
		}
	})
	// HERALD_DEV_DATA=.herald/data on a fresh checkout: the directory (and
	// its parents) do not exist yet.
	t.Run("a data directory that does not exist is created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), ".herald", "data")
		a, err := loadSecrets(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("data directory %v, %v; want a private directory", fi, err)
		}
		b, err := loadSecrets(dir)
		if err != nil || a != b {
			t.Fatalf("second load: %v, same secrets %v", err, a == b)
		}
	})
	t.Run("with a data directory, the same across restarts, private", func(t *testing.T) {
		dir := t.TempDir()
		a, err := loadSecrets(dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := loadSecrets(dir)
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatal("secrets changed between two loads of the same directory")
		}
		fi, err := os.Stat(filepath.Join(dir, secretsFile))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", secretsFile, fi.Mode().Perm())
		}
	})
	t.Run("a damaged file is an error naming it", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, secretsFile), []byte(`{"vapid":{}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadSecrets(dir); err == nil || !strings.Contains(err.Error(), secretsFile) {
			t.Fatalf("err = %v, want one naming %s", err, secretsFile)
		}
	})
}

func TestStreamCheckpoints(t *testing.T) {
	dir := t.TempDir()
	const arn = "arn:aws:dynamodb:ddblocal:000000000000:table/herald-Table/stream/1"
	c, err := openCheckpoints(dir, "RelayStreamMapping", arn)
	if err != nil {
		t.Fatal(err)
	}
	if seq, closed := c.position("shard-1"); seq != "" || closed {
		t.Fatalf("new checkpoints: position = %q, %v", seq, closed)
	}
	if err := c.advance("shard-1", "000100"); err != nil {
		t.Fatal(err)
	}
	if err := c.advance("shard-2", "000200"); err != nil {
		t.Fatal(err)
	}
	if err := c.close("shard-2"); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		mapping    string
		arn        string
		shard      string
		wantSeq    string
		wantClosed bool
	}{
		{"reopened: where it stopped", "RelayStreamMapping", arn, "shard-1", "000100", false},
		{"reopened: a shard read to its end", "RelayStreamMapping", arn, "shard-2", "", true},
		{"reopened: an unknown shard from the start", "RelayStreamMapping", arn, "shard-3", "", false},
		{"another stream (table made again): from the start", "RelayStreamMapping", arn + "x", "shard-1", "", false},
		{"another mapping of the stream keeps its own position", "RelayHighStreamMapping", arn, "shard-1", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := openCheckpoints(dir, tc.mapping, tc.arn)
			if err != nil {
				t.Fatal(err)
			}
			if seq, closed := c.position(tc.shard); seq != tc.wantSeq || closed != tc.wantClosed {
				t.Fatalf("position(%s) = %q, %v; want %q, %v", tc.shard, seq, closed, tc.wantSeq, tc.wantClosed)
			}
		})
	}

	var none *streamCheckpoints // no data directory
	if err := none.advance("s", "1"); err != nil {
		t.Fatal(err)
	}
	if seq, closed := none.position("s"); seq != "" || closed {
		t.Fatal("nil checkpoints remembered something")
	}
	if c, err := openCheckpoints("", "RelayStreamMapping", arn); c != nil || err != nil {
		t.Fatalf("openCheckpoints without a directory = %v, %v; want nil, nil", c, err)
	}
}

// TestStreamCheckpointsFromTheSingleMappingFile: a data directory of the
// version with one relay mapping (stream-checkpoints.json) resumes every
// mapping where that one stopped; each then writes its own file.
func TestStreamCheckpointsFromTheSingleMappingFile(t *testing.T) {
	dir := t.TempDir()
	const arn = "arn:aws:dynamodb:ddblocal:000000000000:table/herald-Table/stream/1"
	if err := writeFileAtomic(filepath.Join(dir, legacyCheckpointsFile), checkpointData{StreamARN: arn, After: map[string]string{"shard-1": "000300"}}, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mapping := range []string{"RelayStreamMapping", "RelayHighStreamMapping"} {
		c, err := openCheckpoints(dir, mapping, arn)
		if err != nil {
			t.Fatal(err)
		}
		if seq, _ := c.position("shard-1"); seq != "000300" {
			t.Fatalf("%s: position %q, want the single mapping's 000300", mapping, seq)
		}
		if err := c.advance("shard-1", "000400"); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, checkpointsFile("RelayHighStreamMapping")))
	if err != nil || !strings.Contains(string(raw), "000400") {
		t.Fatalf("the mapping's own file: %s, %v", raw, err)
	}
}

func TestTableDiff(t *testing.T) {
	key := func(pk, sk string) []ddbtypes.KeySchemaElement {
		return []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(pk), KeyType: ddbtypes.KeyTypeHash}, {AttributeName: aws.String(sk), KeyType: ddbtypes.KeyTypeRange},
		}
	}
	want := &dynamodb.CreateTableInput{
		KeySchema: key("pk", "sk"),
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{
			{IndexName: aws.String("gsi1"), KeySchema: key("gsi1pk", "gsi1sk")},
		},
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	}
	same := func() *ddbtypes.TableDescription {
		return &ddbtypes.TableDescription{
			KeySchema:              key("pk", "sk"),
			GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndexDescription{{IndexName: aws.String("gsi1"), KeySchema: key("gsi1pk", "gsi1sk")}},
			StreamSpecification:    &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
		}
	}
	tests := []struct {
		name   string
		change func(*ddbtypes.TableDescription)
		want   string
	}{
		{"the same table", func(*ddbtypes.TableDescription) {}, ""},
		{"another primary key", func(d *ddbtypes.TableDescription) { d.KeySchema = key("id", "sk") }, "primary key"},
		{"an index missing", func(d *ddbtypes.TableDescription) { d.GlobalSecondaryIndexes = nil }, "global secondary indexes"},
		{"an index with other keys", func(d *ddbtypes.TableDescription) { d.GlobalSecondaryIndexes[0].KeySchema = key("gsi1pk", "x") }, "index gsi1"},
		{"no stream", func(d *ddbtypes.TableDescription) { d.StreamSpecification = nil }, "stream"},
		{"another stream view", func(d *ddbtypes.TableDescription) {
			d.StreamSpecification.StreamViewType = ddbtypes.StreamViewTypeKeysOnly
		}, "stream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have := same()
			tc.change(have)
			if got := tableDiff(want, have); got != tc.want {
				t.Fatalf("tableDiff = %q, want %q", got, tc.want)
			}
		})
	}
}
