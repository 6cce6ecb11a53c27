package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// defaultNodes is the cluster size used when Options.Nodes is 0.
const defaultNodes = 5

// closeGrace is how long Close waits after SIGTERM before it sends SIGKILL.
const closeGrace = 2 * time.Second

// Options configures a Cluster. The zero value starts 5 independent nodes
// without persistence.
type Options struct {
	// Nodes is the number of nodes; 0 means 5, or 3 with RedisCluster.
	// With ClusterReplicas it is the number of masters.
	Nodes int
	// RedisCluster makes the nodes one Redis Cluster (cluster-enabled yes)
	// instead of independent servers: every node is a master with an even
	// share of the 16384 hash slots, and New returns once every node
	// reports cluster_state:ok with the same slot map. Addrs and URLs are
	// then seed addresses of that one cluster. See the package
	// documentation.
	RedisCluster bool
	// ClusterReplicas is the number of replicas each master of a Redis
	// Cluster gets (RedisCluster only); 0, the default, means none. A
	// cluster of m masters has m*(1+ClusterReplicas) nodes: the masters
	// are nodes 0 to m-1, and the replicas of master i follow, from node
	// m+i*ClusterReplicas. New returns once every replica's link to its
	// master is up. Automatic failover then takes 2 to 3 seconds after a
	// master dies. See the package documentation.
	ClusterReplicas int
	// AppendFsyncAlways turns on "appendonly yes" and "appendfsync always",
	// so acknowledged writes survive kill -9. By default a node has no
	// persistence at all (save "" and appendonly no), so a restarted node
	// comes back empty.
	AppendFsyncAlways bool
	// Password is set as requirepass if it is non-empty.
	Password string
	// Config holds extra redis.conf lines, such as
	// "maxmemory-policy volatile-lru".
	Config []string
	// Dir is the parent directory of the node directories. "" means a new
	// temporary directory that Close removes; a directory given here is
	// kept, and data already in its node-<i> directories is loaded.
	Dir string
	// ServerPath is the redis-server binary; "" means "redis-server" looked
	// up on PATH.
	ServerPath string
	// Unmarked leaves the nodes without the restart marker of package
	// redlock, as a new deployment's are, for tests of its restart
	// quarantine: the first acquisition then starts each node's recovery
	// delay (redlock.Options.RecoveryDelay, 30 s by default), during which
	// the node does not vote, unless redlock.Client.MarkReady marks it. By
	// default (false) New marks every node ready to vote, as
	// Client.MarkReady(ctx, true) would, whatever data it loaded from Dir;
	// on a Redis Cluster, every slot's marker. Only New marks nodes: a node
	// started again (Start, Restart) is left as it comes back, so that it
	// sits out its quarantine as a restarted node of a deployment does.
	Unmarked bool
	// TLS, when set, makes every node listen for TLS too, on a port of its
	// own (see TLS, Node.TLSURL). Independent nodes only.
	TLS *TLS
}

// Cluster is a set of redis-server processes on 127.0.0.1: independent
// servers, or the nodes of one Redis Cluster (Options.RedisCluster). Its
// methods are safe for concurrent use.
type Cluster struct {
	nodes     []*Node
	masters   int     // the masters a Redis Cluster formed with, 0 otherwise
	version   Version // the release of redis-server
	dir       string
	removeDir bool

	closeOnce sync.Once
	closeErr  error
}

// Start starts a cluster for a test or benchmark and closes it when the test
// ends. It fails the test (it never skips it) if the cluster cannot start,
// including when redis-server is not installed.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
		return nil // only reached with a testing.TB whose Fatalf returns
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("redlocktest: close: %v", err)
		}
	})
	return c
}

// New starts a cluster and waits until every node answers PING, and, with
// Options.RedisCluster, until the Redis Cluster is formed; it then marks
// the nodes ready to vote unless Options.Unmarked is set. The caller must
// call Close. ctx bounds only the start-up.
func New(ctx context.Context, opts Options) (*Cluster, error) {
	masters, err := nodeCount(opts)
	if err != nil {
		return nil, err
	}
	if err := opts.TLS.check(opts.RedisCluster); err != nil {
		return nil, err
	}
	count := masters * (1 + opts.ClusterReplicas)
	server, err := findServer(opts.ServerPath)
	if err != nil {
		return nil, err
	}
	version, err := serverVersion(server)
	if err != nil {
		return nil, err
	}
	dir, removeDir, err := makeDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, removeDir: removeDir, version: version}
	conf := nodeConfig{
		version:  version,
		aof:      opts.AppendFsyncAlways,
		password: opts.Password,
		cluster:  opts.RedisCluster,
		tls:      clone(opts.TLS),
		extra:    slices.Clone(opts.Config),
	}
	for i := range count {
		n, err := newNode(i, filepath.Join(dir, fmt.Sprintf("node-%d", i)), server, conf)
		if err != nil {
			return nil, errors.Join(err, c.Close())
		}
		c.nodes = append(c.nodes, n)
	}
	if err := c.startAll(ctx); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	if opts.RedisCluster {
		c.masters = masters
		if err := c.formRedisCluster(ctx); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	if !opts.Unmarked {
		if err := c.markAll(ctx); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	return c, nil
}

// nodeCount returns the number of nodes opts asks for, not counting the
// replicas of a Redis Cluster.
func nodeCount(opts Options) (int, error) {
	switch {
	case opts.Nodes < 0:
		return 0, fmt.Errorf("redlocktest: Options.Nodes is %d, want >= 0", opts.Nodes)
	case opts.ClusterReplicas < 0:
		return 0, fmt.Errorf("redlocktest: Options.ClusterReplicas is %d, want >= 0", opts.ClusterReplicas)
	case opts.ClusterReplicas > 0 && !opts.RedisCluster:
		return 0, errors.New("redlocktest: Options.ClusterReplicas needs Options.RedisCluster")
	case opts.RedisCluster && opts.Nodes > SlotCount:
		return 0, fmt.Errorf("redlocktest: Options.Nodes is %d, want at most %d for a Redis Cluster", opts.Nodes, SlotCount)
	case opts.Nodes > 0:
		return opts.Nodes, nil
	case opts.RedisCluster:
		return defaultClusterNodes, nil
	default:
		return defaultNodes, nil
	}
}

// findServer resolves the redis-server binary.
func findServer(path string) (string, error) {
	if path == "" {
		path = "redis-server"
	}
	resolved, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("redlocktest: redis-server not found (install it with `apt-get install -y redis-server`): %w", err)
	}
	return resolved, nil
}

// makeDir returns the absolute parent directory for the nodes and whether
// Close must remove it.
func makeDir(parent string) (dir string, remove bool, err error) {
	if parent == "" {
		dir, err := os.MkdirTemp("", "redlocktest-")
		if err != nil {
			return "", false, fmt.Errorf("redlocktest: create temp dir: %w", err)
		}
		return dir, true, nil
	}
	dir, err = filepath.Abs(parent)
	if err != nil {
		return "", false, fmt.Errorf("redlocktest: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("redlocktest: create dir: %w", err)
	}
	return dir, false, nil
}

// startAll starts every node in parallel.
func (c *Cluster) startAll(ctx context.Context) error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = n.firstStart(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Version returns the release of the nodes' redis-server (see
// ServerVersion). A test that needs a Feature that not every release has
// checks it here.
func (c *Cluster) Version() Version { return c.version }

// Nodes returns the nodes, in index order.
func (c *Cluster) Nodes() []*Node {
	return slices.Clone(c.nodes)
}

// Node returns node i. It panics if i is out of range.
func (c *Cluster) Node(i int) *Node {
	return c.nodes[i]
}

// Addrs returns every node's "127.0.0.1:port", in index order.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// URLs returns every node's redis:// URL, with the password if one is set,
// in index order.
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.URL()
	}
	return urls
}

// Close stops every node (SIGTERM, then SIGKILL after a short grace
// period), waits for the processes to exit and removes the temporary
// directory, if New created one. Nodes cannot be started again afterwards.
// Close is idempotent: later calls return the first call's result.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

// close does the work of Close.
func (c *Cluster) close() error {
	errs := make([]error, len(c.nodes), len(c.nodes)+1)
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = n.shutdown(closeGrace) })
	}
	wg.Wait()
	if c.removeDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("redlocktest: remove dir: %w", err))
		}
	}
	return errors.Join(errs...)
}
