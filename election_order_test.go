package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Candidates that lead longer than their TTL (the lead renewed meanwhile)
// and campaign again after each Resign are elected in the order they came:
// a waiting candidate keeps its place in the queue while the lead is
// renewed, and waits at most the other candidates' leads (SAFETY.md,
// "Waiting clients", point 4). Before, each Campaign gave up its wait,
// and its place, at every expiry the lead had when the wait began, and
// went behind the candidates that had queued later.
func TestElection_candidatesElectedInTheOrderTheyCame(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	const candidates, leads, ttl, hold = 4, 4, 500 * time.Millisecond, 600 * time.Millisecond
	// k turns ahead, each a hold and a round trip, plus a retry pause and
	// a scheduling stall.
	bound := (candidates-1)*hold + time.Second
	var mu sync.Mutex
	var order []int
	var longest time.Duration
	var wg sync.WaitGroup
	for i := range candidates {
		c := newClient(t, cluster, adapters[i%len(adapters)], nil)
		e, err := c.NewElection("ordered", redlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range leads {
				ctx, cancel := context.WithTimeout(bg, 30*time.Second)
				start := time.Now()
				err := e.Campaign(ctx, fmt.Sprintf("candidate-%d", i))
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, i)
				longest = max(longest, time.Since(start))
				mu.Unlock()
				time.Sleep(hold) // the leader's work, across renewals
				if err := e.Resign(bg); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if longest > bound {
		t.Errorf("a candidate waited %s to be elected, past the %s bound of %d leads ahead; order %v",
			longest, bound, candidates-1, order)
	}
}

// Campaign calls of one candidate at once: once one is elected, the
// others return as a call made once it leads does, nil with the lead's
// value and ErrInvalidOptions with another (before, nil whatever their
// value), and after Resign nobody leads: the other calls do not take the
// lead later.
func TestElection_concurrentCampaignsOfOneCandidate(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], fast())
	e, err := c.NewElection("twice")
	if err != nil {
		t.Fatal(err)
	}
	type campaign struct {
		value string
		err   error
	}
	values := []string{"first", "first", "second"}
	done := make(chan campaign, len(values))
	for _, value := range values {
		go func() { done <- campaign{value, e.Campaign(bg, value)} }()
	}
	var ended []campaign
	for range values {
		select {
		case cp := <-done:
			ended = append(ended, cp)
		case <-time.After(10 * time.Second):
			t.Fatal("a Campaign of a candidate that leads did not return within 10 s")
		}
	}
	if err := e.Err(); err != nil {
		t.Fatalf("after every Campaign call returned: %v, want a lead", err)
	}
	led := redlock.TokenGrant(e.Lock().Token()).Owner
	for _, cp := range ended {
		if cp.value == led && cp.err != nil {
			t.Errorf("Campaign with the lead's value %q: %v, want nil", cp.value, cp.err)
		}
		if cp.value != led && !errors.Is(cp.err, redlock.ErrInvalidOptions) {
			t.Errorf("Campaign with %q while the candidate leads with %q: %v, want ErrInvalidOptions", cp.value, led, cp.err)
		}
	}
	if err := e.Resign(bg); err != nil {
		t.Fatal(err)
	}
	if l, err := e.Leader(bg); !errors.Is(err, redlock.ErrNoLeader) {
		t.Errorf("Leader after Resign: %+v, %v; want ErrNoLeader", l, err)
	}
}

// Candidates waiting behind a leader that dies without resigning (its
// Client closed, as in a crash) are elected in the order they came, one
// lead after another: each lead's expiry nudges every waiting candidate
// into an attempt at once, and only the first in line takes the free key.
// Before, whoever reached the nodes first after the expiry won.
func TestElection_afterLeadersDieCandidatesAreElectedInOrder(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	const candidates, ttl = 4, time.Second
	clients, elected := campaignInLine(t, cluster, "crashing", candidates, ttl, nil)
	for leader := range candidates - 1 {
		if err := clients[leader].Close(); err != nil { // dies leading
			t.Fatal(err)
		}
		select {
		case next := <-elected:
			if next != leader+1 {
				t.Fatalf("candidate %d elected after candidate %d died, want %d, the next in line", next, leader, leader+1)
			}
		case <-time.After(10 * ttl):
			t.Fatalf("nobody elected %s after candidate %d died", 10*ttl, leader)
		}
	}
}

// campaignInLine starts n candidates in the election name, each a Client of
// its own with opts over cluster, alternating the adapters, each with a
// lead of ttl: the first is elected, and each of the others is in line
// before the next one comes. It returns the clients and the channel on
// which each candidate's index is sent when it is elected.
func campaignInLine(t *testing.T, cluster *redlocktest.Cluster, name string, n int, ttl time.Duration, opts *redlock.Options) ([]*redlock.Client, <-chan int) {
	t.Helper()
	queue, _ := redlock.QueueKeys(name)
	clients := make([]*redlock.Client, n)
	elected := make(chan int, n)
	for i := range n {
		clients[i] = newClient(t, cluster, adapters[i%len(adapters)], opts)
		e := election(t, clients[i], name, redlock.WithTTL(ttl))
		go func() {
			if err := e.Campaign(bg, fmt.Sprintf("candidate-%d", i)); err == nil {
				elected <- i
			}
		}()
		if i == 0 {
			if got := <-elected; got != 0 {
				t.Fatalf("candidate %d elected first, alone", got)
			}
			continue
		}
		awaitQueueLength(t, cluster, queue, i) // in line before the next one comes
	}
	return clients, elected
}

// awaitQueueLength waits until the sorted set queue holds at least n
// clients on a quorum of the nodes.
func awaitQueueLength(t *testing.T, cluster *redlocktest.Cluster, queue string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		queued := 0
		for _, node := range cluster.Nodes() {
			if v, err := node.Do(bg, "ZCARD", queue); err == nil && atoi(v) >= n {
				queued++
			}
		}
		if queued >= len(cluster.Nodes())/2+1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d clients queued in %s on a quorum of nodes", n, queue)
		}
	}
}

// atoi returns s as an int, 0 when it is not one.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// A candidate elected from the queue keeps its place in line no longer
// than its lead lasts: its entry's deadline on the nodes that elected it
// is at most its TTL past the grant. Before, it lasted QueueLasts (2 s)
// past its last attempt, and a leader that died soon after its election
// kept the other candidates waiting, each deferring to the first live
// client in line, until then, long after its lead had expired.
func TestElection_aLeadersPlaceInLineEndsWithItsLead(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		const name, ttl = "short-lead", 300 * time.Millisecond
		first := election(t, newClient(t, cluster, a, nil), name, redlock.WithTTL(ttl))
		if err := first.Campaign(bg, "first"); err != nil {
			t.Fatal(err)
		}
		next := election(t, newClient(t, cluster, a, nil), name, redlock.WithTTL(ttl))
		elected := make(chan error, 1)
		go func() { elected <- next.Campaign(bg, "next") }()
		awaitQueued(t, cluster, name)
		if err := first.Resign(bg); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-elected:
			if err != nil {
				t.Fatalf("Campaign: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the next candidate was not elected within 10 s of the first one's Resign")
		}
		bound := time.Now().Add(ttl).UnixMicro() // the grant came before now
		_, deadlines := redlock.QueueKeys(name)
		held := holdingNodes(t, cluster, name, leadToken(t, cluster, name))
		for _, n := range held {
			v, err := n.Do(bg, "HVALS", deadlines)
			if err != nil {
				t.Fatal(err)
			}
			ends := strings.Fields(v)
			if len(ends) != 1 {
				t.Fatalf("node %d queues %d clients for the lead, want the leader alone: %q", n.Index(), len(ends), v)
			}
			if end, _ := strconv.ParseInt(ends[0], 10, 64); end > bound {
				t.Errorf("node %d keeps the leader in line %v past its lead's end", n.Index(), time.Duration(end-bound)*time.Microsecond)
			}
		}
	})
}

// leadToken returns the token that holds key on most of cluster's nodes.
func leadToken(t *testing.T, cluster *redlocktest.Cluster, key string) string {
	t.Helper()
	seen := map[string]int{}
	best := ""
	for _, n := range cluster.Nodes() {
		if v := keyOn(t, n, key); v != "" {
			if seen[v]++; seen[v] > seen[best] {
				best = v
			}
		}
	}
	return best
}

// A candidate that waited through one failover is nudged at the next
// leader's expiry too: a leader elected at one lead's expiry that dies in
// turn is followed within the TTL it had left, not at the next retry of
// the candidates (here 6 s or more). Before, the candidate read the nodes
// again right after the first expiry, found nobody leading yet, and slept
// an hour; it was elected at its next retry.
func TestElection_secondFailoverIsOnTime(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	const candidates, ttl = 3, time.Second
	opts := fast()
	opts.Retry = redlock.ExponentialJitter(6*time.Second, 12*time.Second)
	clients, elected := campaignInLine(t, cluster, "twice", candidates, ttl, opts)
	for leader := range candidates - 1 {
		died := time.Now()
		if err := clients[leader].Close(); err != nil { // dies leading
			t.Fatal(err)
		}
		select {
		case next := <-elected:
			if next != leader+1 {
				t.Fatalf("candidate %d elected after candidate %d died, want %d", next, leader, leader+1)
			}
			// Its lead had at most the TTL left, and a candidate reads the
			// nodes a twentieth of it after a vacancy.
			if took := time.Since(died); took > 3*ttl {
				t.Errorf("candidate %d elected %s after candidate %d died with at most %s of its lead left", next, took, leader, ttl)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("nobody elected 30 s after candidate %d died", leader)
		}
	}
}
