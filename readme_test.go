package redlock_test

import (
	"context"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// readmeRunTimeout bounds each README example's run: they take a few locks.
const readmeRunTimeout = time.Minute

// readmeExamples returns the Go code blocks of README.md.
func readmeExamples(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(readme)
	for {
		_, after, ok := strings.Cut(rest, "\n```go\n")
		if !ok {
			return blocks
		}
		block, after, ok := strings.Cut(after, "\n```\n")
		if !ok {
			t.Fatal("README.md: a ```go block is not closed")
		}
		blocks = append(blocks, block+"\n")
		rest = after
	}
}

// writeReadmeModule writes each example as the main package of a
// directory of a new module that requires this one through a replace
// directive to the checkout, and returns the module's directory.
func writeReadmeModule(t *testing.T, examples []string) string {
	t.Helper()
	checkout, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The library's own requirements, every indirect one included, so that
	// the go command needs no go.mod file beyond those the library's build
	// read: an older module in the graph (one without graph pruning) would
	// otherwise have it look for its own requirements' go.mod files, which
	// a module cache filled by building the library may not hold.
	own, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goMod := strings.Replace(string(own), "module github.com/redlock-go/redlock\n", "module example.com/readme\n", 1) +
		fmt.Sprintf("\nrequire github.com/redlock-go/redlock v0.0.0-00010101000000-000000000000\n\n"+
			"replace github.com/redlock-go/redlock => %s\n", checkout)
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"go.mod": goMod, "go.sum": string(sum)}
	for i, code := range examples {
		files[fmt.Sprintf("example%d/main.go", i+1)] = code
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// goCommand returns the go command with args in dir, offline: the module
// cache that built this package has every module the examples need.
func goCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local")
	return cmd
}

// Every Go example of the README is a whole program that, copied into a new
// module, builds and runs against new redlocktest nodes with nothing done
// before: no marking of the nodes, no go-redis import, no extra file.
func TestREADME_examplesBuildAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the README's programs")
	}
	examples := readmeExamples(t)
	if len(examples) == 0 {
		t.Fatal("README.md has no ```go block")
	}
	for i, code := range examples {
		if !strings.HasPrefix(code, "package main\n") || !strings.Contains(code, "\nfunc main() {\n") {
			t.Fatalf("README.md: Go example %d is not a whole program (package main with func main):\n%s", i+1, code)
		}
		if formatted, err := format.Source([]byte(code)); err != nil || string(formatted) != code {
			t.Errorf("README.md: Go example %d is not gofmt'd (%v); gofmt'd:\n%s", i+1, err, formatted)
		}
	}
	dir := writeReadmeModule(t, examples)
	bin := t.TempDir()
	if out, err := goCommand(t.Context(), dir, "build", "-o", bin+"/", "./...").CombinedOutput(); err != nil {
		t.Fatalf("go build of the README's examples: %v\n%s", err, out)
	}
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	for i := range examples {
		t.Run(fmt.Sprintf("example%d", i+1), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), readmeRunTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(bin, fmt.Sprintf("example%d", i+1)))
			cmd.Env = append(os.Environ(), "REDLOCK_NODES="+strings.Join(nodes.URLs(), ","))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("README example %d: %v\n%s", i+1, err, out)
			}
		})
	}
}
