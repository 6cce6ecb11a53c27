package wire

import (
	"strconv"
	"strings"
	"testing"
)

// Every function of lua/ declares the name it is called by, and every script
// defines each function it runs once, after the functions that one calls.
func TestScripts_defineEachFunctionOnceAfterItsCallees(t *testing.T) {
	all := []*luaFunction{acquireFunc, releaseFunc, extendFunc, raiseFunc, inspectFunc, markReadyFunc, shardedReleaseFunc, markerStateFunc, batchFunc}
	scripts := []struct {
		s    *Script
		runs []*luaFunction
	}{
		{AcquireScript, all[:1]}, {ReleaseScript, all[1:2]}, {ExtendScript, all[2:3]}, {RaiseScript, all[3:4]},
		{InspectScript, all[4:5]}, {MarkReadyScript, all[5:6]}, {ShardedReleaseScript, all[6:7]}, {MarkerStateScript, all[7:8]},
		{BatchScript, all},
	}
	for _, sc := range scripts {
		var check func(f *luaFunction) int
		check = func(f *luaFunction) int {
			decl := "local function " + f.name + "("
			if !strings.Contains("\n"+f.source, "\n"+decl) {
				t.Errorf("%s's source does not declare %s", f.name, decl)
			}
			if n := strings.Count(sc.s.Source, decl); n != 1 {
				t.Errorf("%s script: %s defined %d times", sc.runs[0].name, f.name, n)
			}
			at := strings.Index(sc.s.Source, f.source)
			for _, c := range f.calls {
				if check(c) > at {
					t.Errorf("%s script: %s, which %s calls, is defined after it", sc.runs[0].name, c.name, f.name)
				}
			}
			return at
		}
		for _, f := range sc.runs {
			check(f)
		}
	}
	if want := "\nreturn acquire(KEYS, ARGV, 0, 0, {})\n"; !strings.HasSuffix(AcquireScript.Source, want) {
		t.Errorf("the acquire script does not end with %q", want)
	}
}

// The batch script's table lists the scripts' functions by their batchID.
func TestScripts_batchIDsNumberTheBatchTable(t *testing.T) {
	want := "\nreturn batch(KEYS, ARGV, {acquire, queuedAcquire, release, extend, raise, inspect, markReady, shardedRelease, acquireShared, markerState, forceRelease, shardedForceRelease, listen, keepPlace, reclaim})\n"
	if !strings.HasSuffix(BatchScript.Source, want) {
		t.Fatalf("the batch script does not end with %q", want)
	}
	for i, s := range []*Script{AcquireScript, QueuedAcquireScript, ReleaseScript, ExtendScript, RaiseScript, InspectScript, MarkReadyScript, ShardedReleaseScript,
		AcquireSharedScript, MarkerStateScript, ForceReleaseScript, ShardedForceReleaseScript, ListenScript, KeepPlaceScript, ReclaimScript} {
		if s.BatchID != strconv.Itoa(i+1) {
			t.Errorf("%s: batchID %q, want %d", s.fn.name, s.BatchID, i+1)
		}
	}
}

// On a Redis Cluster node the release runs as its sharded variant, which
// announces by SPUBLISH; elsewhere, and for every other script, as itself.
func TestScripts_releaseHasAClusterVariant(t *testing.T) {
	if ReleaseScript.ForNode(true) != ShardedReleaseScript || ReleaseScript.ForNode(false) != ReleaseScript {
		t.Error("the release script does not run as shardedRelease on a cluster node, and only there")
	}
	if !strings.Contains(ShardedReleaseScript.Source, `"SPUBLISH"`) || strings.Contains(releaseSource, "SPUBLISH") {
		t.Error("SPUBLISH belongs to shardedRelease only")
	}
	for _, s := range []*Script{AcquireScript, QueuedAcquireScript, ExtendScript, RaiseScript, InspectScript, MarkReadyScript, MarkerStateScript, BatchScript} {
		if s.ForNode(true) != s {
			t.Errorf("%s runs as another script on a cluster node", s.SHA1)
		}
	}
}
