package wire

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strconv"
	"strings"
)

// The library's Lua scripts are built from the functions in lua/, one per
// file. Each function that serves a request takes the script call's KEYS and
// ARGV, the offsets k and a of its request's keys and arguments in them
// (it reads KEYS[k+1], ARGV[a+1], …), and a table that the requests of one
// script call share (see lua/acquire.lua). A script for one request defines
// its function and the functions that one calls, then calls it on the whole
// KEYS and ARGV; the batch script defines them all and runs each request of a
// batch on its own slice (package nodes).

// luaFunction is a function of lua/.
type luaFunction struct {
	// name is the local name that source declares.
	name   string
	source string
	// calls are the functions of lua/ that it calls.
	calls []*luaFunction
}

var (
	//go:embed lua/clock.lua
	clockSource string
	//go:embed lua/process.lua
	processSource string
	//go:embed lua/marker.lua
	markerSource string
	//go:embed lua/set_marker.lua
	setMarkerSource string
	//go:embed lua/quarantine.lua
	quarantineSource string
	//go:embed lua/fence.lua
	fenceSource string
	//go:embed lua/votes.lua
	votesSource string
	//go:embed lua/admit_quarantine.lua
	admitQuarantineSource string
	//go:embed lua/admit.lua
	admitSource string
	//go:embed lua/repeated_grant.lua
	repeatedGrantSource string
	//go:embed lua/not_a_lock.lua
	notALockSource string
	//go:embed lua/not_readers.lua
	notReadersSource string
	//go:embed lua/acquire.lua
	acquireSource string
	//go:embed lua/node_millis.lua
	nodeMillisSource string
	//go:embed lua/readers.lua
	readersSource string
	//go:embed lua/leave_shared.lua
	leaveSharedSource string
	//go:embed lua/extend_shared.lua
	extendSharedSource string
	//go:embed lua/acquire_shared.lua
	acquireSharedSource string
	//go:embed lua/queued_acquire.lua
	queuedAcquireSource string
	//go:embed lua/next_waiters.lua
	nextWaitersSource string
	//go:embed lua/publish.lua
	publishSource string
	//go:embed lua/listened.lua
	listenedSource string
	//go:embed lua/leave_queue.lua
	leaveQueueSource string
	//go:embed lua/announce.lua
	announceSource string
	//go:embed lua/release.lua
	releaseSource string
	//go:embed lua/sharded_release.lua
	shardedReleaseSource string
	//go:embed lua/extend.lua
	extendSource string
	//go:embed lua/token_delay.lua
	tokenDelaySource string
	//go:embed lua/delay.lua
	delaySource string
	//go:embed lua/reader_delay.lua
	readerDelaySource string
	//go:embed lua/raise.lua
	raiseSource string
	//go:embed lua/reclaim.lua
	reclaimSource string
	//go:embed lua/inspect.lua
	inspectSource string
	//go:embed lua/marker_state.lua
	markerStateSource string
	//go:embed lua/as_checked.lua
	asCheckedSource string
	//go:embed lua/mark_ready.lua
	markReadySource string
	//go:embed lua/batch.lua
	batchSource string
	//go:embed lua/waiting.lua
	waitingSource string
	//go:embed lua/listen.lua
	listenSource string
	//go:embed lua/enter_queue.lua
	enterQueueSource string
	//go:embed lua/reader_entries.lua
	readerEntriesSource string
	//go:embed lua/keep_place.lua
	keepPlaceSource string
	//go:embed lua/list_scan.lua
	listScanSource string
	//go:embed lua/force_release.lua
	forceReleaseSource string
	//go:embed lua/sharded_force_release.lua
	shardedForceReleaseSource string
)

// The functions of lua/.
var (
	nodeClockFunc     = &luaFunction{name: "nodeClock", source: clockSource}
	processIDFunc     = &luaFunction{name: "processID", source: processSource}
	restartMarkerFunc = &luaFunction{name: "restartMarker", source: markerSource}
	setMarkerFunc     = &luaFunction{name: "setMarker", source: setMarkerSource, calls: []*luaFunction{processIDFunc}}
	recoveryLeftFunc  = &luaFunction{name: "recoveryLeft", source: quarantineSource, calls: []*luaFunction{nodeClockFunc, processIDFunc}}
	nextFenceFunc     = &luaFunction{name: "nextFence", source: fenceSource, calls: []*luaFunction{nodeClockFunc}}
	votesFunc         = &luaFunction{name: "votes", source: votesSource}

	quarantineFunc = &luaFunction{name: "quarantine", source: admitQuarantineSource,
		calls: []*luaFunction{nodeClockFunc, processIDFunc, restartMarkerFunc, setMarkerFunc, recoveryLeftFunc, votesFunc}}
	repeatedGrantFunc     = &luaFunction{name: "repeatedGrant", source: repeatedGrantSource, calls: []*luaFunction{nextFenceFunc}}
	admitFunc             = &luaFunction{name: "admit", source: admitSource, calls: []*luaFunction{votesFunc, quarantineFunc, nextFenceFunc, repeatedGrantFunc}}
	nodeMillisFunc        = &luaFunction{name: "nodeMillis", source: nodeMillisSource, calls: []*luaFunction{nodeClockFunc}}
	expireWithReadersFunc = &luaFunction{name: "expireWithReaders", source: readersSource}
	leaveSharedFunc       = &luaFunction{name: "leaveShared", source: leaveSharedSource, calls: []*luaFunction{nodeMillisFunc, expireWithReadersFunc, readerDelayStandsFunc}}
	extendSharedFunc      = &luaFunction{name: "extendShared", source: extendSharedSource, calls: []*luaFunction{nodeMillisFunc, expireWithReadersFunc, readerDelayStandsFunc}}

	notALockFunc      = &luaFunction{name: "notALock", source: notALockSource}
	notReadersFunc    = &luaFunction{name: "notReaders", source: notReadersSource}
	acquireFunc       = &luaFunction{name: "acquire", source: acquireSource, calls: []*luaFunction{admitFunc, nextFenceFunc, notALockFunc}}
	acquireSharedFunc = &luaFunction{name: "acquireShared", source: acquireSharedSource,
		calls: []*luaFunction{admitFunc, readerEntriesFunc, enterQueueFunc, nodeMillisFunc, expireWithReadersFunc, nextFenceFunc, leaveSharedFunc, markWaitingFunc, notALockFunc, notReadersFunc}}
	queuedAcquireFunc = &luaFunction{name: "queuedAcquire", source: queuedAcquireSource,
		calls: []*luaFunction{acquireFunc, nextWaitersFunc, readerEntriesFunc, enterQueueFunc}}
	markWaitingFunc       = &luaFunction{name: "markWaiting", source: waitingSource}
	readerEntriesFunc     = &luaFunction{name: "readerFirst", source: readerEntriesSource}
	enterQueueFunc        = &luaFunction{name: "enterQueue", source: enterQueueSource, calls: []*luaFunction{markWaitingFunc}}
	keepPlaceFunc         = &luaFunction{name: "keepPlace", source: keepPlaceSource, calls: []*luaFunction{enterQueueFunc}}
	listenFunc            = &luaFunction{name: "listen", source: listenSource, calls: []*luaFunction{markWaitingFunc}}
	nextWaitersFunc       = &luaFunction{name: "nextWaiters", source: nextWaitersSource}
	publishFunc           = &luaFunction{name: "publish", source: publishSource}
	listenedFunc          = &luaFunction{name: "listened", source: listenedSource}
	leaveQueueFunc        = &luaFunction{name: "leaveQueue", source: leaveQueueSource}
	announceFunc          = &luaFunction{name: "sendAnnouncement", source: announceSource, calls: []*luaFunction{readerEntriesFunc}}
	tokenDelayFunc        = &luaFunction{name: "tokenDelay", source: tokenDelaySource}
	delayStandsFunc       = &luaFunction{name: "delayStands", source: delaySource, calls: []*luaFunction{tokenDelayFunc}}
	readerDelayStandsFunc = &luaFunction{name: "readerDelayStands", source: readerDelaySource, calls: []*luaFunction{tokenDelayFunc}}
	releaseFunc           = &luaFunction{name: "release", source: releaseSource,
		calls: []*luaFunction{leaveQueueFunc, nextWaitersFunc, leaveSharedFunc, publishFunc, announceFunc, listenedFunc, delayStandsFunc}}
	shardedReleaseFunc = &luaFunction{name: "shardedRelease", source: shardedReleaseSource, calls: []*luaFunction{releaseFunc}}
	extendFunc         = &luaFunction{name: "extend", source: extendSource, calls: []*luaFunction{extendSharedFunc, delayStandsFunc}}
	raiseFunc          = &luaFunction{name: "raise", source: raiseSource, calls: []*luaFunction{nodeMillisFunc, nextFenceFunc}}
	reclaimFunc        = &luaFunction{name: "reclaim", source: reclaimSource, calls: []*luaFunction{admitFunc, nextFenceFunc}}
	inspectFunc        = &luaFunction{name: "inspect", source: inspectSource, calls: []*luaFunction{restartMarkerFunc, recoveryLeftFunc, nodeMillisFunc, readerDelayStandsFunc}}
	markerStateFunc    = &luaFunction{name: "markerState", source: markerStateSource, calls: []*luaFunction{restartMarkerFunc, recoveryLeftFunc, processIDFunc}}
	asCheckedFunc      = &luaFunction{name: "asChecked", source: asCheckedSource}
	markReadyFunc      = &luaFunction{name: "markReady", source: markReadySource,
		calls: []*luaFunction{processIDFunc, restartMarkerFunc, setMarkerFunc, recoveryLeftFunc, asCheckedFunc}}
	batchFunc        = &luaFunction{name: "batch", source: batchSource}
	listScanFunc     = &luaFunction{name: "listScan", source: listScanSource}
	forceReleaseFunc = &luaFunction{name: "forceRelease", source: forceReleaseSource,
		calls: []*luaFunction{nextWaitersFunc, publishFunc, announceFunc, notReadersFunc}}
	shardedForceReleaseFunc = &luaFunction{name: "shardedForceRelease", source: shardedForceReleaseSource, calls: []*luaFunction{forceReleaseFunc}}
)

// Script is a Lua script with its SHA1, sent by EVALSHA, and the same
// code as a function of Library, called by FCALL.
type Script struct {
	Source string
	SHA1   string
	// Function is the name of the script's function in Library.
	Function string
	// fn is the function of lua/ that the script runs.
	fn *luaFunction
	// call is the Lua expression that runs fn on KEYS and ARGV: the
	// script returns it, and so does its function in Library.
	call string
	// BatchID is fn's number in the batch script's table of functions.
	BatchID string
	// Replicated: its writes that grant or extend a lock must reach the
	// replicas that Options.WaitReplicas asks for.
	Replicated bool
	// AllowOOM: the script only frees memory or refreshes expiries (a
	// release, an extension), so that its function runs on a node out of
	// memory (maxmemory with noeviction), as DEL and PEXPIRE do; a script
	// sent by EVALSHA is judged command by command anyway.
	AllowOOM bool
	// ReadOnly: the script writes nothing (an inspection, a listing's
	// step, a read of the restart markers); its function is flagged
	// no-writes, so that it runs on a node out of memory too, and it
	// AllowOOM.
	ReadOnly bool
	// onCluster, when set, is the script to run instead on a Redis Cluster
	// node, with the same keys and arguments (see ForNode).
	onCluster *Script
	// suffix sets its function's name apart from another script's of the
	// same name (see BatchOOMScript).
	suffix string
}

// ForNode returns the script to run on a node: s, or its variant for a
// Redis Cluster node when cluster is true and s has one.
func (s *Script) ForNode(cluster bool) *Script {
	if cluster && s.onCluster != nil {
		return s.onCluster
	}
	return s
}

// The library's scripts, each named for the function of lua/ it runs; the
// ones that grant or extend a lock are Replicated.
var (
	AcquireScript       = replicatedScript(acquireFunc)
	QueuedAcquireScript = replicatedScript(queuedAcquireFunc)
	AcquireSharedScript = replicatedScript(acquireSharedFunc)
	ReleaseScript       = newScript(releaseFunc).withClusterVariant(ShardedReleaseScript).allowingOOM()
	ExtendScript        = replicatedScript(extendFunc).allowingOOM()
	RaiseScript         = replicatedScript(raiseFunc)
	// ReclaimScript takes a lock that a quorum holds on one more node
	// (Lock.reclaim).
	ReclaimScript     = replicatedScript(reclaimFunc)
	InspectScript     = newScript(inspectFunc).readOnly()
	MarkReadyScript   = newScript(markReadyFunc)
	MarkerStateScript = newScript(markerStateFunc).readOnly()
	// ShardedReleaseScript is ReleaseScript on a Redis Cluster node: it
	// announces by SPUBLISH (see Layout.ReleaseChannel).
	ShardedReleaseScript = newScript(shardedReleaseFunc).allowingOOM()
	// ListScanScript takes one step of a listing's SCAN of a node; it is
	// sent by itself, never in a batch.
	ListScanScript = newScript(listScanFunc).readOnly()
	// ForceReleaseScript frees a lock without its token (Client.ForceRelease).
	ForceReleaseScript = newScript(forceReleaseFunc).withClusterVariant(ShardedForceReleaseScript)
	// ListenScript sets a key's waiting mark for an observer that listens
	// for its releases (Election.Observe).
	ListenScript = newScript(listenFunc)
	// KeepPlaceScript renews a waiting client's place in a key's queue
	// between attempts further apart than the place lasts.
	KeepPlaceScript = newScript(keepPlaceFunc)
	// ShardedForceReleaseScript is ForceReleaseScript on a Redis Cluster
	// node: it announces by SPUBLISH.
	ShardedForceReleaseScript = newScript(shardedForceReleaseFunc)

	// BatchScript runs the requests of several calls to one node in one
	// script call; see pipe.
	BatchScript = newBatchScript(AcquireScript, QueuedAcquireScript, ReleaseScript, ExtendScript, RaiseScript, InspectScript, MarkReadyScript,
		ShardedReleaseScript, AcquireSharedScript, MarkerStateScript, ForceReleaseScript, ShardedForceReleaseScript, ListenScript,
		KeepPlaceScript, ReclaimScript)
	// BatchOOMScript is BatchScript for a batch of requests whose scripts
	// all AllowOOM: its function runs on a node out of memory too.
	BatchOOMScript = BatchScript.oomVariant()
)

// allowingOOM sets s.AllowOOM, and returns s.
func (s *Script) allowingOOM() *Script {
	s.AllowOOM = true
	return s
}

// readOnly sets s.ReadOnly and s.AllowOOM, and returns s.
func (s *Script) readOnly() *Script {
	s.ReadOnly, s.AllowOOM = true, true
	return s
}

// oomVariant returns s run by a function of its own that AllowOOM: the
// same source, so the same script by EVALSHA.
func (s *Script) oomVariant() *Script {
	v := *s
	v.AllowOOM, v.suffix = true, "_oom"
	return &v
}

// IsBatch reports whether s is a batch script (see BatchScript).
func (s *Script) IsBatch() bool { return s.fn == nil }

// withClusterVariant sets the script to run instead of s on a Redis Cluster
// node, and returns s.
func (s *Script) withClusterVariant(onCluster *Script) *Script {
	s.onCluster = onCluster
	return s
}

// newScript returns the script that runs fn for one request: fn's
// definition, then a call of fn on the whole KEYS and ARGV with a table of
// its own to share.
func newScript(fn *luaFunction) *Script {
	call := fn.name + "(KEYS, ARGV, 0, 0, {})"
	s := withSHA1(definitions(fn) + "return " + call + "\n")
	s.fn, s.call = fn, call
	return s
}

// replicatedScript is newScript for a script whose writes grant or extend a
// lock (see script.Replicated).
func replicatedScript(fn *luaFunction) *Script {
	s := newScript(fn)
	s.Replicated = true
	return s
}

// newBatchScript returns the script that runs a batch of requests for
// scripts (lua/batch.lua), and numbers the scripts in order in it.
func newBatchScript(scripts ...*Script) *Script {
	fns := make([]*luaFunction, 0, len(scripts)+1)
	names := make([]string, 0, len(scripts))
	for i, s := range scripts {
		s.BatchID = strconv.Itoa(i + 1)
		fns = append(fns, s.fn)
		names = append(names, s.fn.name)
	}
	fns = append(fns, batchFunc)
	call := batchFunc.name + "(KEYS, ARGV, {" + strings.Join(names, ", ") + "})"
	s := withSHA1(definitions(fns...) + "return " + call + "\n")
	s.call = call
	return s
}

// withSHA1 returns source as a script, with its SHA1.
func withSHA1(source string) *Script {
	sum := sha1.Sum([]byte(source))
	return &Script{Source: source, SHA1: hex.EncodeToString(sum[:])}
}

// definitions returns the sources of fns and of the functions they call,
// each once and after the functions it calls, since a Lua local is visible
// only after its declaration.
func definitions(fns ...*luaFunction) string {
	var b strings.Builder
	defined := make(map[*luaFunction]bool)
	var define func(f *luaFunction)
	define = func(f *luaFunction) {
		if defined[f] {
			return
		}
		defined[f] = true
		for _, c := range f.calls {
			define(c)
		}
		b.WriteString(f.source)
		if !strings.HasSuffix(f.source, "\n") {
			b.WriteByte('\n')
		}
	}
	for _, f := range fns {
		define(f)
	}
	return b.String()
}

// Scripts are all the library's scripts, the batch script last.
var Scripts = []*Script{AcquireScript, QueuedAcquireScript, AcquireSharedScript, ReleaseScript, ShardedReleaseScript,
	ExtendScript, RaiseScript, ReclaimScript, InspectScript, MarkReadyScript, MarkerStateScript, ListScanScript, ForceReleaseScript, ShardedForceReleaseScript, ListenScript, KeepPlaceScript, BatchScript, BatchOOMScript}

// Name returns the name of the function of lua/ that the script runs, or
// "batch" for the batch script.
func (s *Script) Name() string {
	if s.fn == nil {
		return "batch"
	}
	return s.fn.name
}
