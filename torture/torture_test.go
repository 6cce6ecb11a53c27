package torture_test

import (
	"os"
	"testing"

	"github.com/redlock-go/redlock/torture"
	"github.com/redlock-go/redlock/torture/scenario"
	"github.com/redlock-go/redlock/torture/traffic"
)

func TestMain(m *testing.M) {
	traffic.RunIfWorker()
	os.Exit(m.Run())
}

func TestShortTable(t *testing.T) {
	table := scenario.Short()
	if pattern := os.Getenv("TORTURE_SCENARIO"); pattern != "" {
		var err error
		if table, err = scenario.Select(scenario.Table(), pattern); err != nil {
			t.Fatal(err)
		}
	}
	for _, sc := range table {
		t.Run(torture.FileName(sc.Name), func(t *testing.T) {
			out := torture.Run(t.Context(), sc, torture.Options{Seed: 1, Dir: t.TempDir()})
			r := out.Result
			t.Logf("%s: %d ops, %d attempts, %d grants, %d writes; violations %v; expect %s, judged %d: %s (%v)",
				sc.Name, r.Ops, r.Attempts, r.Grants, r.Writes, r.Counts, sc.Expect, out.Judged, out.Verdict, out.Elapsed)
			for i, v := range r.Violations {
				if i < 5 {
					t.Logf("  %s: %s", v.Checker, v.Detail)
				}
			}
			if out.Verdict != torture.Pass {
				t.Errorf("%s: verdict %s (expected %s, %d judged violations): %v", sc.Name, out.Verdict, sc.Expect, out.Judged, out.Err)
			}
		})
	}
}
