package catalog

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/renders.golden from the current engine")

const goldenFile = "testdata/renders.golden"

// catalogRenders calls render for every template of the shipped catalog on
// every data set the equivalence test uses: for every type, locale and kind,
// sample, worst-case and hostile data (each variable set to each hostile
// value), and digests on hostile items and every count. Each render has a
// stable key.
func catalogRenders(render func(key string, tm *tmpl, data any)) {
	c := MustLoad()
	for _, name := range c.Names() {
		typ, _ := c.Lookup(name)
		datasets := []map[string]any{typ.sampleData(), typ.WorstCaseData()}
		for _, h := range hostile {
			d := map[string]any{}
			for v := range typ.Variables {
				d[v] = h
			}
			datasets = append(datasets, d)
		}
		tms := templatesOf(typ)
		for _, label := range slices.Sorted(maps.Keys(tms)) {
			tm := tms[label]
			for i, d := range datasets {
				if !strings.Contains(tm.name, "digest.") {
					render(fmt.Sprintf("%s data%d", label, i), tm, d)
					continue
				}
				for _, n := range []int{0, 1, 2} {
					items := slices.Repeat([]map[string]any{d}, n)
					for _, count := range []int{n, n + 3} {
						render(fmt.Sprintf("%s data%d items%d count%d", label, i, n, count), tm, DigestData{Count: count, Items: items}.templateData())
					}
				}
			}
		}
	}
}

// goldenLine is one render as the golden file holds it: its key, then its
// output quoted (or "error" for a render that failed).
func goldenLine(key string, tm *tmpl, data any) string {
	var b bytes.Buffer
	if err := tm.execute(&b, data); err != nil {
		return key + "\terror"
	}
	return key + "\t" + strconv.Quote(b.String())
}

// Every catalog render is byte-identical to testdata/renders.golden, the
// outputs captured from the engine that rendered the catalog before
// (go test ./internal/catalog -run TestCatalogRendersAsGolden -update
// rewrites it, for a deliberate change of a template).
func TestCatalogRendersAsGolden(t *testing.T) {
	var got []string
	catalogRenders(func(key string, tm *tmpl, data any) { got = append(got, goldenLine(key, tm, data)) })
	if *updateGolden {
		if err := os.WriteFile(goldenFile, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d renders, the golden file has %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("render %d differs:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if len(want) < 2500 {
		t.Fatalf("only %d renders in the golden file", len(want))
	}
	t.Logf("%d renders identical to %s", len(got), goldenFile)
}
