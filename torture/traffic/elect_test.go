package traffic

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
)

// Candidates (Elect) of two workers lead in turn, each lead a grant with
// its term as fence, and their observers (Observe) record the leaders and
// vacancies in order: the checkers find nothing.
func TestRun_candidatesLeadInTurnAndObserversSeeThem(t *testing.T) {
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	var cfgs []Config
	for _, name := range []string{"worker-0", "worker-1"} {
		cfgs = append(cfgs, Config{
			Name: name, Nodes: nodes.URLs(), Key: "svc", TTL: 300 * time.Millisecond, DisableQuarantine: true,
			Elect: true, Observe: true, Renew: true,
			ThinkMin: 100 * time.Millisecond, ThinkMax: 150 * time.Millisecond, RetryMax: 2 * time.Millisecond,
		})
	}
	events := runWorkers(t, 1500*time.Millisecond, cfgs...)
	r := check.Check(events, 0, check.Bound{})
	if r.Total(check.Kinds) != 0 || r.Grants < 2 || !r.Applicable[check.Observed] {
		t.Fatalf("violations %v, %d grants, observed %v; want none, several, observed", r.Counts, r.Grants, r.Applicable[check.Observed])
	}
	leaders := map[string]bool{}
	for _, ev := range events {
		if ev.Op == OpObserve && ev.Type == history.Info && ev.Token != "" {
			leaders[ev.Detail] = true
		}
	}
	if !leaders["worker-0"] || !leaders["worker-1"] {
		t.Fatalf("observed leaders %v, want both workers", leaders)
	}
}

// A candidate must renew its lead and take one name alone.
func TestConfig_candidateMustRenew(t *testing.T) {
	c := Config{Name: "w", Nodes: []string{"redis://x"}, Register: "http://r", Key: "k", Elect: true}
	if c.validate() == nil {
		t.Error("a candidate without Renew is valid")
	}
	c.Renew, c.Limit = true, 2
	if c.validate() == nil {
		t.Error("a candidate of a permit is valid")
	}
}
