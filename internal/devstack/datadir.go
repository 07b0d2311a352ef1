package devstack

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/heraldhq/herald/internal/webpush"
)

// What a data directory (Config.DataDir, HERALD_DEV_DATA) holds besides the
// emulators' own state (dynamodb/, queues.json).
const (
	secretsFile = "secrets.json"
	// legacyCheckpointsFile is where a data directory kept the position of
	// the one relay mapping there was; each mapping now has its own file
	// (checkpointsFile), which starts from this one.
	legacyCheckpointsFile = "stream-checkpoints.json"
)

// checkpointsFile is the file of one stream mapping's checkpoints.
func checkpointsFile(mapping string) string { return "stream-checkpoints-" + mapping + ".json" }

// localSecrets are what AWS keeps in SSM and Secrets Manager. With a data
// directory they outlive a restart, so that unsubscribe links in mail sent
// before it keep working and pushes keep their VAPID identity.
type localSecrets struct {
	VAPID             webpush.VAPIDKeys `json:"vapid"`
	UnsubscribeSecret string            `json:"unsubscribeSecret"`
}

// loadSecrets returns the data directory's secrets, creating them (and the
// directory, private, with its parents) on first use; without a directory,
// fresh ones. Start calls it before anything else uses the directory.
func loadSecrets(dataDir string) (localSecrets, error) {
	path := filepath.Join(dataDir, secretsFile)
	if dataDir != "" {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return localSecrets{}, fmt.Errorf("data directory (HERALD_DEV_DATA): %w", err)
		}
		raw, err := os.ReadFile(path)
		if err == nil {
			var s localSecrets
			if err := json.Unmarshal(raw, &s); err != nil || s.VAPID.PrivateKey == "" || s.UnsubscribeSecret == "" {
				return localSecrets{}, fmt.Errorf("%s is damaged (delete it to make new secrets): %v", path, err)
			}
			return s, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return localSecrets{}, err
		}
	}
	keys, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return localSecrets{}, err
	}
	s := localSecrets{VAPID: keys, UnsubscribeSecret: rand.Text() + rand.Text()}
	if dataDir != "" {
		if err := writeFileAtomic(path, s, 0o600); err != nil {
			return localSecrets{}, err
		}
	}
	return s, nil
}

// streamCheckpoints remember, per shard, the last stream record the relay's
// mapping has finished with, as Lambda's event source mapping does, so that a
// restarted stack goes on where it stopped instead of replaying the stream
// from its horizon. A nil *streamCheckpoints remembers nothing.
type streamCheckpoints struct {
	path string
	mu   sync.Mutex
	data checkpointData
}

type checkpointData struct {
	StreamARN string `json:"streamArn"`
	// After maps a shard id to the sequence number of its last finished record.
	After map[string]string `json:"after"`
	// Closed lists shards read to their end.
	Closed map[string]bool `json:"closed"`
}

// openCheckpoints loads dataDir's checkpoints of mapping for streamARN; those
// of another stream (the table was deleted and made again) are dropped. A
// mapping without its own file starts where the single relay mapping of
// earlier versions stopped, when that file exists.
func openCheckpoints(dataDir, mapping, streamARN string) (*streamCheckpoints, error) {
	if dataDir == "" {
		return nil, nil
	}
	c := &streamCheckpoints{path: filepath.Join(dataDir, checkpointsFile(mapping))}
	from := c.path
	raw, err := os.ReadFile(from)
	if errors.Is(err, fs.ErrNotExist) {
		from = filepath.Join(dataDir, legacyCheckpointsFile)
		raw, err = os.ReadFile(from)
	}
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &c.data); err != nil {
			return nil, fmt.Errorf("%s is damaged (delete it to replay the stream): %w", from, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if c.data.StreamARN != streamARN {
		c.data = checkpointData{StreamARN: streamARN}
	}
	if c.data.After == nil {
		c.data.After = map[string]string{}
	}
	if c.data.Closed == nil {
		c.data.Closed = map[string]bool{}
	}
	return c, nil
}

// position returns where to resume shard: after sequence number seq, or
// closed when it was read to its end.
func (c *streamCheckpoints) position(shard string) (seq string, closed bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data.After[shard], c.data.Closed[shard]
}

// advance records that shard is finished up to and including seq.
func (c *streamCheckpoints) advance(shard, seq string) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data.After[shard] = seq
	return writeFileAtomic(c.path, c.data, 0o600)
}

// close records that shard was read to its end.
func (c *streamCheckpoints) close(shard string) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data.Closed[shard] = true
	delete(c.data.After, shard)
	return writeFileAtomic(c.path, c.data, 0o600)
}

// writeFileAtomic writes v as JSON to path through a temporary file, so a
// crash leaves the old file or the new one, never half of one.
func writeFileAtomic(path string, v any, perm os.FileMode) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
