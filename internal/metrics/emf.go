package metrics

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// DefaultNamespace is the CloudWatch namespace of Herald's metrics; the
// alarms and dashboard in template.yaml read it.
const DefaultNamespace = "Herald"

// maxValues is EMF's limit of values per metric in one document.
const maxValues = 100

// EMF buffers metrics and writes them as Embedded Metric Format documents,
// one JSON line per set of dimension values, on Flush.
type EMF struct {
	w         io.Writer
	namespace string
	now       func() time.Time

	mu     sync.Mutex
	groups map[Dims]*group
}

var _ Recorder = (*EMF)(nil)

type group struct {
	counts map[Name]float64
	values map[Name][]float64
}

// NewEMF returns a recorder writing to w (a Lambda function's stdout) under
// namespace (DefaultNamespace when empty). now may be nil (time.Now).
func NewEMF(w io.Writer, namespace string, now func() time.Time) *EMF {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if now == nil {
		now = time.Now
	}
	return &EMF{w: w, namespace: namespace, now: now, groups: map[Dims]*group{}}
}

func (e *EMF) group(d Dims) *group {
	d = d.sanitized()
	g, ok := e.groups[d]
	if !ok {
		g = &group{counts: map[Name]float64{}, values: map[Name][]float64{}}
		e.groups[d] = g
	}
	return g
}

// Add implements Recorder; unknown names, distribution metrics and n ≤ 0 are ignored.
func (e *EMF) Add(_ context.Context, name Name, d Dims, n int) {
	if s, ok := specs[name]; !ok || s.unit != Count || n <= 0 {
		return
	}
	e.mu.Lock()
	e.group(d).counts[name] += float64(n)
	e.mu.Unlock()
}

// Observe implements Recorder; unknown names and counters are ignored.
func (e *EMF) Observe(_ context.Context, name Name, d Dims, v float64) {
	if s, ok := specs[name]; !ok || s.unit == Count {
		return
	}
	if v < 0 {
		v = 0 // clocks of different hosts: never publish a negative latency
	}
	e.mu.Lock()
	g := e.group(d)
	g.values[name] = append(g.values[name], v)
	e.mu.Unlock()
}

// Flush implements Recorder: it writes and forgets everything recorded.
// Write errors are dropped: metrics never fail an invocation.
func (e *EMF) Flush(context.Context) {
	e.mu.Lock()
	groups := e.groups
	e.groups = map[Dims]*group{}
	e.mu.Unlock()
	if len(groups) == 0 {
		return
	}
	ts := e.now().UnixMilli()
	for _, d := range sortedDims(groups) {
		for _, doc := range e.documents(ts, d, groups[d]) {
			line, err := json.Marshal(doc)
			if err != nil {
				continue
			}
			_, _ = e.w.Write(append(line, '\n'))
		}
	}
}

// Embedder is a Recorder that can hand what was recorded under one set of
// dimensions to a JSON log line of the caller's instead of writing a
// document of its own: EMF allows any other top-level properties in a
// document, so a log line that carries the metric values, the dimension
// values and the _aws metadata is the metrics document.
type Embedder interface {
	// Embed removes what was recorded under d since the last flush and
	// returns it as the top-level properties of one EMF document; nil (and
	// nothing removed) when nothing was recorded under d or it needs more
	// than one document.
	Embed(d Dims) []slog.Attr
}

var _ Embedder = (*EMF)(nil)

// Embed returns r's document for d as log attributes when r is an Embedder
// (see Embedder), else nil: the caller logs its line as usual and the
// metrics stay for Flush.
func Embed(r Recorder, d Dims) []slog.Attr {
	if e, ok := r.(Embedder); ok {
		return e.Embed(d)
	}
	return nil
}

// Embed implements Embedder.
func (e *EMF) Embed(d Dims) []slog.Attr {
	d = d.sanitized()
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.groups[d]
	if !ok {
		return nil
	}
	docs := e.documents(e.now().UnixMilli(), d, g)
	if len(docs) != 1 {
		return nil
	}
	delete(e.groups, d)
	keys := make([]string, 0, len(docs[0]))
	for k := range docs[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, docs[0][k]))
	}
	return attrs
}

// documents renders one group; distributions with more than maxValues
// values continue in further documents.
func (e *EMF) documents(ts int64, d Dims, g *group) []map[string]any {
	dimNames, dimVals := d.keys()
	var docs []map[string]any
	for chunk := 0; ; chunk++ {
		doc := map[string]any{}
		for k, v := range dimVals {
			doc[k] = v
		}
		var directives []map[string]any
		for _, name := range Names() {
			var value any
			if chunk == 0 {
				if c, ok := g.counts[name]; ok {
					value = c
				}
			}
			if vs := g.values[name]; len(vs) > chunk*maxValues {
				value = vs[chunk*maxValues : min(len(vs), (chunk+1)*maxValues)]
			}
			if value == nil {
				continue
			}
			doc[string(name)] = value
			directives = append(directives, map[string]any{
				"Namespace":  e.namespace,
				"Dimensions": dimensionSets(dimNames, specs[name].rollups),
				"Metrics":    []map[string]string{{"Name": string(name), "Unit": string(specs[name].unit)}},
			})
		}
		if len(directives) == 0 {
			return docs
		}
		doc["_aws"] = map[string]any{"Timestamp": ts, "CloudWatchMetrics": directives}
		docs = append(docs, doc)
	}
}

// dimensionSets is the recorded set plus each rollup whose dimensions were
// all recorded.
func dimensionSets(recorded []string, rollups [][]string) [][]string {
	sets := [][]string{recorded}
	has := map[string]bool{}
	for _, n := range recorded {
		has[n] = true
	}
	for _, r := range rollups {
		ok := len(r) < len(recorded)
		for _, n := range r {
			ok = ok && has[n]
		}
		if ok {
			sets = append(sets, r)
		}
	}
	return sets
}

func sortedDims(groups map[Dims]*group) []Dims {
	out := make([]Dims, 0, len(groups))
	for d := range groups {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Channel != b.Channel {
			return a.Channel < b.Channel
		}
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		return a.Code < b.Code
	})
	return out
}
