package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// memProfileRate samples one allocation per this many bytes with
// -memprofile: fine enough to rank allocation sites within a few seconds,
// coarse enough not to slow the libraries into timeouts (every allocation
// recorded does).
const memProfileRate = 4096

// Defaults of the flags that size the cases.
const (
	defaultCrowd    = 64
	defaultLanDelay = 250 * time.Microsecond
	// defaultMemoryNames and defaultMemoryWait: ten thousand names make a
	// byte per name stand out of the servers' own variations; a minute
	// outlasts redlock's fencing counters (TTL plus RecoveryDelay, 40 s
	// with its defaults), the longest-lived state of any library measured.
	defaultMemoryNames = 10_000
	defaultMemoryWait  = time.Minute
)

// config is the parsed command line.
type config struct {
	duration, warmup time.Duration
	slowLatency      time.Duration
	sizes            sizes
	cases, libs      *regexp.Regexp
	out, readme      string
	server           string
	cpuProfile       string
	memProfile       string
	rounds           int
	quiet            bool
	command          string

	growth      bool
	growthPlan  growthPlan
	memory      bool
	memoryNames int
	memoryWait  time.Duration
}

// run is the command: it parses args, runs the selected cases and writes the
// results. It returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.memProfile != "" {
		runtime.MemProfileRate = memProfileRate
	}
	paths, err := execute(ctx, cfg, stderr)
	if err == nil && cfg.memProfile != "" {
		err = writeHeapProfile(cfg.memProfile)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join(paths, ", "))
	return 0
}

// execute runs what cfg asks for, the cases or the growth curves and the
// memory measurement, and writes their results. It returns the paths
// written.
func execute(ctx context.Context, cfg config, progress io.Writer) ([]string, error) {
	// go-redis has only a process-wide logger.
	logs := &clientLog{}
	redis.SetLogger(logs)
	var paths []string
	if !cfg.growth && !cfg.memory {
		rep, err := runSuite(ctx, cfg, logs, progress)
		if err != nil {
			return nil, err
		}
		return writeOutputs(cfg, rep)
	}
	if cfg.growth {
		rep, err := runGrowth(ctx, cfg, cfg.growthPlan, logs, progress)
		if err != nil {
			return nil, err
		}
		if paths, err = writeGrowthOutputs(cfg, rep); err != nil {
			return nil, err
		}
	}
	if cfg.memory {
		m, err := runMemory(ctx, cfg)
		if err != nil {
			return nil, err
		}
		more, err := writeMemoryOutputs(cfg, m)
		if err != nil {
			return nil, err
		}
		paths = append(paths, more...)
	}
	return paths, nil
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run . [flags]\n\n"+
			"Starts 5 redis-server nodes on loopback and measures every lock library in every case,\n"+
			"one after another on the same nodes, then writes latest.md, latest.json and latest.svg.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var cfg config
	var cases, libs string
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "measured `time` per case and library")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "unmeasured `time` before each measurement")
	fs.DurationVar(&cfg.slowLatency, "slow-latency", 20*time.Millisecond, "`delay` the proxy adds to the slow node's replies")
	fs.StringVar(&cases, "cases", "", "run only cases whose id matches this `regexp` (ids: "+caseIDs()+")")
	fs.StringVar(&libs, "libs", "", "run only libraries whose name matches this `regexp`")
	fs.StringVar(&cfg.out, "out", "results", "`dir`ectory for latest.md, latest.json and latest.svg")
	fs.StringVar(&cfg.readme, "readme", "", "also replace the results section of this markdown `file`")
	fs.StringVar(&cfg.server, "redis-server", "redis-server", "redis-server `binary`")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `file`")
	fs.StringVar(&cfg.memProfile, "memprofile", "", "write an allocation profile (one sample per 4 KiB) to `file`")
	fs.IntVar(&cfg.rounds, "rounds", 3, "split each measurement into this many `rounds` that take the libraries in turn")
	fs.IntVar(&cfg.sizes.crowd, "crowd", defaultCrowd, "separate `clients` on one shared key in the crowd and try-loop cases")
	fs.DurationVar(&cfg.sizes.lanDelay, "lan-delay", defaultLanDelay, "`delay` added each way in front of every node in the network cases")
	fs.BoolVar(&cfg.growth, "growth", false, "run the growth curves (by nodes, goroutines, waiters) instead of the cases: about 8 to 9 minutes")
	fs.BoolVar(&cfg.memory, "memory", false, "measure what distinct lock names leave on the nodes instead of the cases: about a minute and a half")
	fs.IntVar(&cfg.memoryNames, "memory-names", defaultMemoryNames, "distinct lock `names` each library takes and releases with -memory")
	fs.DurationVar(&cfg.memoryWait, "memory-wait", defaultMemoryWait, "with -memory, read the nodes again this `long` after the last release")
	fs.BoolVar(&cfg.quiet, "quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return cfg, fmt.Errorf("arguments")
	}
	var err error
	if cfg.cases, err = regexp.Compile(cases); err != nil {
		fmt.Fprintln(stderr, "bench: -cases:", err)
		return cfg, err
	}
	if cfg.libs, err = regexp.Compile(libs); err != nil {
		fmt.Fprintln(stderr, "bench: -libs:", err)
		return cfg, err
	}
	if cfg.duration <= 0 || cfg.warmup < 0 || cfg.rounds < 1 || cfg.sizes.crowd < 1 || cfg.sizes.lanDelay <= 0 ||
		cfg.memoryNames < 1 || cfg.memoryWait < 0 {
		fmt.Fprintln(stderr, "bench: -duration and -lan-delay must be positive, -warmup and -memory-wait not negative, "+
			"-rounds, -crowd and -memory-names at least 1")
		return cfg, fmt.Errorf("flags")
	}
	cfg.growthPlan = defaultGrowth()
	cfg.command = strings.TrimSpace("go run . " + strings.Join(args, " "))
	return cfg, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}
