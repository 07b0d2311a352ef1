// Command testdynamodb runs a command with one DynamoDB Local for the whole
// of it: make test's packages keep their tables there, each stack under an
// access key of its own (DynamoDB Local started without -sharedDb keeps a
// database per key), instead of each starting a JVM of its own.
//
//	go run ./scripts/testdynamodb go test ./...
//
// The command gets the endpoint in HERALD_TEST_DYNAMODB; packages that need
// their own instance (a data directory, an emulator killed on purpose) start
// one as before.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/heraldhq/herald/internal/devstack"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testdynamodb COMMAND [ARG...]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

func run(name string, args []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	emu, err := devstack.StartEmulators(ctx, devstack.EmulatorOptions{InfraDir: "infra/local", Services: []string{"dynamodb"}, DatabasePerKey: true})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testdynamodb:", err)
		return 1
	}
	defer emu.Stop()

	cmd := exec.Command(name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), devstack.SharedDynamoDBEnv+"="+emu.DynamoDB)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testdynamodb:", err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	select {
	case exit := <-emu.Exited():
		fmt.Fprintln(os.Stderr, "testdynamodb: the shared DynamoDB Local ended during the run:", exit)
		if err == nil {
			return 1
		}
	default:
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testdynamodb:", err)
		return 1
	}
	return 0
}
