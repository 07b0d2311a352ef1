// Package devstack runs Herald on a laptop: it starts the local AWS emulators,
// creates the table and queues that template.yaml declares, and plays the
// parts of Lambda (API Gateway, the DynamoDB Streams and SQS event source
// mappings, the schedule) around the same handlers the Lambda mains run.
package devstack

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// SharedDynamoDBEnv names the variable holding the endpoint of a DynamoDB
// Local that test packages' stacks and emulators share, each in a database
// of its own (make test starts one through scripts/testdynamodb): one JVM
// for the run instead of one per package. Unset, each starts its own.
const SharedDynamoDBEnv = "HERALD_TEST_DYNAMODB"

// NewAccessKey returns a static access key no other client of a shared
// DynamoDB Local uses, so its tables are in a database of their own.
func NewAccessKey() string {
	return "local" + strings.ReplaceAll(newRequestID(), "-", "")
}

// Emulators are the running local AWS services.
type Emulators struct {
	DynamoDB string // endpoint URL (also serves DynamoDB Streams)
	SQS      string
	SES      string
	// SES2 is the second SES, the email failover's region (started only
	// when asked for: EmulatorOptions.Services names "ses2").
	SES2  string
	procs []*process
	// exited receives an error for each emulator that ends before Stop.
	exited   chan error
	stopping atomic.Bool
}

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	tail []string // last lines of output, for start-up errors
}

// emulatorNames say which program each emulator is, for messages.
var emulatorNames = map[string]string{
	"dynamodb": "DynamoDB Local (dynamodb)",
	"sqs":      "fauxqs (sqs)",
	"ses":      "aws-ses-v2-local (ses)",
	"ses2":     "aws-ses-v2-local (ses2, the email failover region)",
}

// EmulatorExitError reports an emulator that ended while the stack ran.
type EmulatorExitError struct {
	// Name is the emulator's short name: dynamodb, sqs or ses.
	Name string
	PID  int
	// State is how the process ended ("signal: killed", "exit status 1").
	State string
	// Output is the emulator's last lines of output.
	Output string
}

func (e *EmulatorExitError) Error() string {
	msg := fmt.Sprintf("emulator %s (pid %d) stopped unexpectedly: %s", emulatorNames[e.Name], e.PID, e.State)
	if e.Output != "" {
		msg += "\nits last output:\n" + e.Output
	}
	return msg
}

// EmulatorOptions locate the emulator installation.
type EmulatorOptions struct {
	// InfraDir is infra/local (package.json, node_modules, .cache/dynamodb).
	InfraDir string
	// Log receives emulator output lines; nil discards them.
	Log io.Writer
	// Services names the emulators to start ("dynamodb", "sqs", "ses"); empty
	// starts all three. A package testing one adapter starts only its own.
	Services []string
	// DataDir, when set, keeps the emulators' state there across restarts:
	// DynamoDB Local's database in DataDir/dynamodb, the SQS queues and
	// their messages in DataDir/queues.json. Empty: everything is in memory
	// and lost when the emulators stop.
	DataDir string
	// DynamoDB, when set, is the endpoint of a DynamoDB Local already
	// running, used instead of starting one.
	DynamoDB string
	// DatabasePerKey starts DynamoDB Local without -sharedDb: it keeps a
	// database per access key and region, so stacks with keys of their own
	// can share it (make test's shared instance, scripts/testdynamodb).
	DatabasePerKey bool
}

// StartEmulators starts DynamoDB Local, fauxqs and aws-ses-v2-local (or the
// subset opts.Services names) on free loopback ports and waits until each
// answers. The endpoint of an emulator not started is "". On error, whatever
// started is stopped.
func StartEmulators(ctx context.Context, opts EmulatorOptions) (*Emulators, error) {
	dir, err := filepath.Abs(opts.InfraDir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "fauxqs")); err != nil {
		return nil, fmt.Errorf("emulators not installed in %s: run `make deps` (npm ci): %w", dir, err)
	}
	jarDir := filepath.Join(dir, ".cache", "dynamodb")
	if _, err := os.Stat(filepath.Join(jarDir, "DynamoDBLocal.jar")); err != nil {
		return nil, fmt.Errorf("DynamoDB Local not installed: run `make deps` (infra/local/fetch-dynamodb.sh): %w", err)
	}
	dbArgs := []string{"-inMemory"}
	var sqsArgs []string
	if opts.DataDir != "" {
		data, err := filepath.Abs(opts.DataDir)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Join(data, "dynamodb"), 0o700); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		dbArgs = []string{"-dbPath", filepath.Join(data, "dynamodb")}
		sqsArgs = []string{filepath.Join(data, "queues.json")}
	}
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	e := &Emulators{
		exited:   make(chan error, 4),
		DynamoDB: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		SQS:      fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		SES:      fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
		SES2:     fmt.Sprintf("http://127.0.0.1:%d", ports[3]),
	}
	dynamoCmd := append([]string{"java"}, dynamoDBJavaOptions...)
	dynamoCmd = append(dynamoCmd, dynamoDBLauncher(jarDir, filepath.Join(dir, "dynamodb", "LoopbackDynamoDB.java"))...)
	dynamoCmd = append(dynamoCmd, dbArgs...)
	if !opts.DatabasePerKey {
		dynamoCmd = append(dynamoCmd, "-sharedDb")
	}
	dynamoCmd = append(dynamoCmd, "-disableTelemetry", "-port", fmt.Sprint(ports[0]))
	specs := []emulatorSpec{
		{"dynamodb", jarDir, dynamoCmd, e.DynamoDB},
		{"sqs", dir, append([]string{"node", "fauxqs.mjs", fmt.Sprint(ports[1])}, sqsArgs...), e.SQS},
		{"ses", dir, []string{"node", filepath.Join("node_modules", "aws-ses-v2-local", "dist", "cli.js"), "--host", "127.0.0.1", "--port", fmt.Sprint(ports[2])}, e.SES},
		{"ses2", dir, []string{"node", filepath.Join("node_modules", "aws-ses-v2-local", "dist", "cli.js"), "--host", "127.0.0.1", "--port", fmt.Sprint(ports[3])}, e.SES2},
	}
	if len(opts.Services) == 0 {
		opts.Services = []string{"dynamodb", "sqs", "ses"}
	}
	{
		kept := specs[:0]
		for _, s := range specs {
			if slices.Contains(opts.Services, s.name) {
				kept = append(kept, s)
			}
		}
		specs = kept
		started := func(name, url string) string {
			if slices.Contains(opts.Services, name) {
				return url
			}
			return ""
		}
		e.DynamoDB, e.SQS, e.SES, e.SES2 = started("dynamodb", e.DynamoDB), started("sqs", e.SQS), started("ses", e.SES), started("ses2", e.SES2)
	}
	if opts.DynamoDB != "" && e.DynamoDB != "" {
		specs = slices.DeleteFunc(specs, func(s emulatorSpec) bool { return s.name == "dynamodb" })
		e.DynamoDB = opts.DynamoDB
	}
	for _, s := range specs {
		p, err := startProcess(s.name, s.dir, s.args, opts.Log, e.exitedEarly)
		if err != nil {
			e.Stop()
			return nil, err
		}
		e.procs = append(e.procs, p)
	}
	// Generous: on a loaded 2-core machine (make test runs packages in parallel)
	// DynamoDB Local has taken 46-55 s to answer; a process that exits is still
	// reported at once, since waitHTTP watches it.
	for i, s := range specs {
		if err := waitHTTP(ctx, s.url, e.procs[i], 110*time.Second); err != nil {
			e.Stop()
			return nil, err
		}
	}
	return e, nil
}

// dynamoDBJavaOptions start DynamoDB Local's JVM for a short-lived local
// stack: the client compiler only and the serial collector. Start-up is
// mostly class loading and JIT compilation on a machine whose cores run the
// tests too; measured on a loaded 2-core machine they cut the CPU seconds to
// the first answer from ~10 to ~3 (docs/benchmarks.md, "Test time"), and the
// steady load of a test or of `make dev` does not need the server compiler.
var dynamoDBJavaOptions = []string{"-Xms64m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}

// dynamoDBLauncher is the class path and main class that start DynamoDB
// Local through LoopbackDynamoDB (source, a .java file). Java's single-file
// source launcher compiles the source on every start (~2 CPU seconds), so the
// class is compiled once with javac into jarDir/launcher-<hash of the source>
// (a changed source gets a new directory) and reused; when javac is missing or
// fails, the source launcher runs it as before.
func dynamoDBLauncher(jarDir, source string) []string {
	cp := "DynamoDBLocal.jar:DynamoDBLocal_lib/*"
	sourceLauncher := []string{"-Djava.library.path=DynamoDBLocal_lib", "-cp", cp, source}
	src, err := os.ReadFile(source)
	if err != nil {
		return sourceLauncher
	}
	sum := sha256.Sum256(src)
	classes := filepath.Join(jarDir, "launcher-"+hex.EncodeToString(sum[:6]))
	class := []string{"-Djava.library.path=DynamoDBLocal_lib", "-cp", classes + ":" + cp, "LoopbackDynamoDB"}
	if _, err := os.Stat(filepath.Join(classes, "LoopbackDynamoDB.class")); err == nil {
		return class
	}
	// Compile into a temporary directory and rename it into place: packages
	// starting stacks at the same time may both compile; one rename wins.
	tmp, err := os.MkdirTemp(jarDir, "launcher-tmp-")
	if err != nil {
		return sourceLauncher
	}
	defer os.RemoveAll(tmp)
	javac := exec.Command("javac", "-d", tmp, "-cp", cp, source)
	javac.Dir = jarDir
	if err := javac.Run(); err != nil {
		return sourceLauncher
	}
	if err := os.Rename(tmp, classes); err != nil {
		if _, statErr := os.Stat(filepath.Join(classes, "LoopbackDynamoDB.class")); statErr != nil {
			return sourceLauncher
		}
	}
	return class
}

// emulatorSpec is how to start one emulator and where it answers.
type emulatorSpec struct {
	name string
	dir  string
	args []string
	url  string
}

// Exited delivers an *EmulatorExitError for each emulator that ends before
// Stop is called.
func (e *Emulators) Exited() <-chan error { return e.exited }

// PID returns the process id of the named emulator (dynamodb, sqs, ses), or 0.
func (e *Emulators) PID(name string) int {
	for _, p := range e.procs {
		if p.name == name {
			return p.cmd.Process.Pid
		}
	}
	return 0
}

func (e *Emulators) exitedEarly(p *process) {
	if e.stopping.Load() {
		return
	}
	state := "exited"
	if ps := p.cmd.ProcessState; ps != nil {
		state = ps.String()
	}
	select {
	case e.exited <- &EmulatorExitError{Name: p.name, PID: p.cmd.Process.Pid, State: state, Output: p.output()}:
	default:
	}
}

// Stop terminates every emulator (and its children) and waits for them.
func (e *Emulators) Stop() {
	e.stopping.Store(true)
	for _, p := range e.procs {
		p.stop()
	}
	e.procs = nil
}

func startProcess(name, dir string, args []string, logw io.Writer, onExit func(*process)) (*process, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	// Own process group, so stop() reaches grandchildren (npm/java helpers),
	// and the kernel kills it if this process dies first (no orphans).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s emulator: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.tail = append(p.tail, line)
			if len(p.tail) > 20 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
			if logw != nil {
				fmt.Fprintf(logw, "[%s] %s\n", name, line)
			}
		}
		_ = cmd.Wait()
		close(p.done)
		onExit(p)
	}()
	return p, nil
}

func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// waitHTTP polls url until anything answers over HTTP.
func waitHTTP(ctx context.Context, url string, p *process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s emulator exited during start-up:\n%s", p.name, p.output())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s emulator did not answer at %s within %s:\n%s", p.name, url, timeout, p.output())
		}
	}
}

// freePorts reserves n distinct loopback ports. They are released before the
// emulators bind them; the window is small and the ports are random.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
