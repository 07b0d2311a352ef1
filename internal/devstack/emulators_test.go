package devstack

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The DynamoDB Local launcher is compiled once per source and reused; a
// changed source gets its own classes, and without javac the source launcher
// runs it.
func TestDynamoDBLauncherCompilesOnce(t *testing.T) {
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("no javac")
	}
	// A stand-in source of the same class compiles in a fraction of the
	// real one's time (no DynamoDB Local class path to read).
	jarDir := t.TempDir()
	src := []byte("public class LoopbackDynamoDB { public static void main(String[] args) {} }\n")
	source := filepath.Join(t.TempDir(), "LoopbackDynamoDB.java")
	if err := os.WriteFile(source, src, 0o600); err != nil {
		t.Fatal(err)
	}
	classDir := func(args []string) string {
		t.Helper()
		i := slices.Index(args, "-cp")
		if i < 0 || args[len(args)-1] != "LoopbackDynamoDB" {
			t.Fatalf("launcher %q: want the compiled class", args)
		}
		dir, _, _ := strings.Cut(args[i+1], ":")
		return dir
	}

	first := classDir(dynamoDBLauncher(jarDir, source))
	class := filepath.Join(first, "LoopbackDynamoDB.class")
	fi, err := os.Stat(class)
	if err != nil {
		t.Fatal(err)
	}
	if again := classDir(dynamoDBLauncher(jarDir, source)); again != first {
		t.Fatalf("second start uses %s, want %s", again, first)
	}
	if fi2, err := os.Stat(class); err != nil || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("the class was compiled again (%v)", err)
	}

	if err := os.WriteFile(source, append(src, "// changed\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed := classDir(dynamoDBLauncher(jarDir, source)); changed == first {
		t.Fatalf("a changed source reuses %s", first)
	}
	if tmp, _ := filepath.Glob(filepath.Join(jarDir, "launcher-tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary directories left: %v", tmp)
	}

	// No javac: the source launcher, as before.
	if err := os.WriteFile(source, append(src, "// changed again\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	if args := dynamoDBLauncher(jarDir, source); args[len(args)-1] != source {
		t.Fatalf("without javac the launcher is %q, want the source %s", args, source)
	}
}
