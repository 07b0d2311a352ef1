// Command coldstart measures each Lambda function's cold start the way Lambda
// sees it: it builds the function for this machine (same flags as the
// deployment build, native architecture), starts it against a fake Lambda
// Runtime API on loopback, and times process start → first
// /invocation/next (init) and → first response (init + first invoke). The
// environment comes from template.yaml with resource references filled with
// placeholders, and every AWS endpoint points at a closed loopback port.
//
//	go run ./scripts/coldstart [-runs 5]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
	"github.com/heraldhq/herald/internal/webpush"
)

// firstEvent is a cheap first invocation per function (no AWS call needed).
var firstEvent = map[string]string{
	"ApiFunction": `{"version":"2.0","routeKey":"GET /nope","rawPath":"/nope","requestContext":{"http":{"method":"GET","path":"/nope"}}}`,
}

func main() {
	runs := flag.Int("runs", 5, "cold starts per function")
	flag.Parse()
	if err := run(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}

func run(runs int) error {
	tm, err := devstack.LoadTemplate("template.yaml", nil)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "herald-coldstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	keys, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return err
	}
	fmt.Printf("%-18s %12s %12s   (median of %d; native build, -tags lambda.norpc)\n", "function", "init", "init+invoke", runs)
	for _, fn := range tm.Functions() {
		name := strings.ToLower(strings.TrimSuffix(fn.LogicalID, "Function"))
		bin := filepath.Join(dir, name)
		build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", bin, "./functions/"+name)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
		env := []string{"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x", "AWS_LAMBDA_LOG_FORMAT=JSON",
			"AWS_EC2_METADATA_DISABLED=true", "AWS_ENDPOINT_URL=http://127.0.0.1:9", "VAPID_PUBLIC_KEY=" + keys.PublicKey, "VAPID_PRIVATE_KEY=" + keys.PrivateKey}
		for k, v := range fn.Env {
			// Empty template values (AWS_ENDPOINT_URL, VAPID_PRIVATE_KEY,
			// UNSUBSCRIBE_SECRET: sam local's hooks) must not unset the above.
			if v == "" || k == "VAPID_PUBLIC_KEY" {
				continue
			}
			env = append(env, k+"="+placeholders.ReplaceAllString(v, "https://sqs.us-east-1.amazonaws.com/123456789012/placeholder"))
		}
		var inits, totals []time.Duration
		for range runs {
			i, t, err := coldStart(bin, env, firstEvent[fn.LogicalID])
			if err != nil {
				return fmt.Errorf("%s: %w", fn.LogicalID, err)
			}
			inits, totals = append(inits, i), append(totals, t)
		}
		fmt.Printf("%-18s %12s %12s\n", fn.LogicalID, median(inits).Round(100*time.Microsecond), median(totals).Round(100*time.Microsecond))
	}
	return nil
}

var placeholders = regexp.MustCompile(`\$\{[^}]+\}`)

// coldStart runs one process against a fake Runtime API and returns the time
// to its first poll for work (init) and to its first response.
func coldStart(bin string, env []string, event string) (initDur, total time.Duration, err error) {
	if event == "" {
		event = `{}`
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	polled := make(chan time.Time, 4)
	responded := make(chan time.Time, 1)
	served := false
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		polled <- time.Now()
		if served {
			<-r.Context().Done() // hold the second poll until shutdown
			return
		}
		served = true
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "cold-1")
		w.Header().Set("Lambda-Runtime-Deadline-Ms", fmt.Sprint(time.Now().Add(30*time.Second).UnixMilli()))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:cold")
		io.WriteString(w, event)
	})
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", func(w http.ResponseWriter, r *http.Request) {
		responded <- time.Now()
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", func(w http.ResponseWriter, r *http.Request) {
		responded <- time.Now()
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		err = fmt.Errorf("init error: %s", b)
		w.WriteHeader(http.StatusAccepted)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String())
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	// One Wait only, in this goroutine; the deferred kill reaps through it.
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	select {
	case t := <-polled:
		initDur = t.Sub(start)
	case <-exited:
		return 0, 0, fmt.Errorf("exited during init: %s", stderr.String())
	case <-ctx.Done():
		return 0, 0, fmt.Errorf("no poll within 20s: %s", stderr.String())
	}
	select {
	case t := <-responded:
		total = t.Sub(start)
	case <-ctx.Done():
		return 0, 0, fmt.Errorf("no response within 20s")
	}
	return initDur, total, err
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}
