package report

import (
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/redlock-go/redlock/torture"
	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
)

const (
	// zoomBefore and zoomAfter frame the close-up of a scenario's first
	// violation: long enough to show the holders around it, short enough
	// that a few milliseconds of overlap are visible.
	zoomBefore = 150 * time.Millisecond
	zoomAfter  = 250 * time.Millisecond
	// listedViolations is how many violations a section lists in text.
	listedViolations = 12
)

// Run describes the whole run for the report's header.
type Run struct {
	// Command reproduces the run.
	Command string
	Seed    uint64
	Started time.Time
	Elapsed time.Duration
}

// IndexFile is the name of the HTML report in its directory.
const IndexFile = "index.html"

// WriteHTML writes dir/index.html: a summary table and, per scenario, its
// timeline, a close-up of its first violation, the faults and the
// violations found. History files written into dir by the run are linked.
// It returns the page's path.
func WriteHTML(dir string, run Run, outs []*torture.Outcome) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	page := pageData{Run: run, Kinds: check.Kinds, LivenessHeader: livenessHeader}
	for _, o := range outs {
		page.Rows = append(page.Rows, section(dir, o))
		if o.Verdict != torture.Pass {
			page.Failed++
		}
	}
	path := filepath.Join(dir, IndexFile)
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	err = pageTemplate.Execute(f, page)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return path, nil
}

type pageData struct {
	Run            Run
	Kinds          []check.Kind
	LivenessHeader []string
	Rows           []sectionData
	Failed         int
}

type sectionData struct {
	O          *torture.Outcome
	ID         string
	Cells      []string
	Liveness   string
	Faults     []string
	Timeline   template.HTML
	Zoom       template.HTML
	ZoomAt     string
	Violations []string
	More       int
	History    string
}

func section(dir string, o *torture.Outcome) sectionData {
	s := sectionData{O: o, ID: torture.FileName(o.Scenario.Name)}
	for _, k := range check.Kinds {
		s.Cells = append(s.Cells, Cell(o, k))
	}
	s.Cells = append(s.Cells, LivenessCells(o)...)
	s.Liveness = LivenessSummary(o)
	if o.HistoryFile != "" {
		if rel, err := filepath.Rel(dir, o.HistoryFile); err == nil {
			s.History = filepath.ToSlash(rel)
		}
	}
	seen := map[string]bool{}
	for _, f := range history.Faults(o.Events) {
		if !seen[f.Kind] {
			seen[f.Kind] = true
			s.Faults = append(s.Faults, f.Kind)
		}
	}
	if o.End <= o.Start {
		return s
	}
	s.Timeline = timeline(o, o.Start, o.End)
	vs := append([]check.Violation(nil), o.Result.Violations...)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Start < vs[j].Start })
	for i, v := range vs {
		if i == listedViolations {
			s.More = len(vs) - i
			break
		}
		s.Violations = append(s.Violations, v.Checker.String()+": "+v.Detail)
	}
	if len(vs) > 0 {
		first := vs[0]
		from := max(o.Start, first.Start-int64(zoomBefore))
		to := min(o.End, max(first.End, first.Start)+int64(zoomAfter))
		s.Zoom = timeline(o, from, to)
		s.ZoomAt = fmt.Sprintf("%.3fs", float64(first.Start-o.Start)/1e9)
	}
	return s
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"seconds": func(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>redlock torture report</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table.sum { border-collapse: collapse; }
table.sum td, table.sum th { padding: 3px 9px; border-bottom: 1px solid #eee; text-align: right; }
table.sum td:first-child, table.sum th:first-child { text-align: left; }
.PASS { color: #2b7a2b; font-weight: bold; } .FAIL, .ERROR { color: #d62728; font-weight: bold; }
section { margin-top: 2.5em; border-top: 1px solid #ccc; padding-top: .5em; }
.about { color: #555; } .small { font-size: 90%; color: #555; }
ul.v { font-size: 90%; } .legend span { display: inline-block; margin-right: 1.2em; }
.sw { display: inline-block; width: 12px; height: 10px; vertical-align: middle; margin-right: 4px; }
</style></head><body>
<h1>redlock torture report</h1>
<p>{{len .Rows}} scenarios, {{if .Failed}}<span class="FAIL">{{.Failed}} did not match their expectation</span>{{else}}<span class="PASS">all matched their expectation</span>{{end}}.
Seed {{.Run.Seed}}, started {{.Run.Started.Format "2006-01-02 15:04:05 MST"}}, took {{seconds .Run.Elapsed}}.
Reproduce with <code>{{.Run.Command}}</code>.</p>
<p class="small">Counts are violations per checker; counts in parentheses are reported but do not decide the verdict
(on the fenced register only the register and the fencing order do); "-" means nothing to check.
A scenario expected to <em>hold</em> passes with no violation, one expected to be <em>caught</em> with at least one.
Liveness is checked apart, in every scenario that states a bound on waiting: a wait past the bound, or a share of
acquisitions served below the least, fails the scenario whatever it expects. <em>wait</em> is the longest wait held
to the bound: for workers that loop TryAcquire ("free"), the longest the lock stayed free while one tried;
a bound marked +d may be passed by d by a waiter that some faults touch (a holder killed, other waiters stopped);
one marked * holds outside faults only.</p>
<table class="sum"><tr><th>scenario</th><th>register</th><th>ops</th><th>grants</th>{{range .Kinds}}<th>{{.}}</th>{{end}}{{range .LivenessHeader}}<th>{{.}}</th>{{end}}<th>expected</th><th>verdict</th></tr>
{{range .Rows}}<tr><td><a href="#{{.ID}}">{{.O.Scenario.Name}}</a></td><td>{{.O.Scenario.Register}}</td><td>{{.O.Result.Ops}}</td><td>{{.O.Result.Grants}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}<td>{{.O.Scenario.Expect}}</td><td class="{{.O.Verdict}}">{{.O.Verdict}}</td></tr>
{{end}}</table>
<p class="legend small">
<span><span class="sw" style="background:#4e79a7"></span>a worker holds the lock (granted → release or validity deadline)</span>
<span><span class="sw" style="border:1px dashed #4e79a7"></span>still acting after its validity ended</span>
<span><span class="sw" style="background:#222;width:2px"></span>accepted write</span>
<span><span class="sw" style="background:#ff7f0e;width:2px"></span>refused write</span>
<span><span class="sw" style="background:#7f7f7f;opacity:.6"></span>fault (shaded; hover for details)</span>
<span><span class="sw" style="background:#d62728"></span>violation: two holders, or more than a semaphore's limit (red bars), lost update (×), fence out of order (◆), not linearizable (top bar), a wait past the bound (red outline)</span>
</p>
{{range .Rows}}<section id="{{.ID}}">
<h2>{{.O.Scenario.Name}} <span class="{{.O.Verdict}}">{{.O.Verdict}}</span></h2>
<p class="about">{{.O.Scenario.About}}.</p>
<p class="small">Expected to {{.O.Scenario.Expect}}; {{.O.Judged}} violation(s) in the checkers that decide it.
{{.O.Result.Ops}} operations, {{.O.Result.Attempts}} acquisition attempts, {{.O.Result.Grants}} grants, {{.O.Result.Writes}} accepted writes;
TTL {{.O.Scenario.TTL}}, {{.O.Scenario.Workers}} workers, register {{.O.Scenario.Register}}{{if .Faults}}; faults: {{range $i, $f := .Faults}}{{if $i}}, {{end}}{{$f}}{{end}}{{end}}.
Took {{seconds .O.Elapsed}}.{{if .History}} History: <a href="{{.History}}">{{.History}}</a>.{{end}}</p>
<p class="small">{{.Liveness}}</p>
{{if .O.Err}}<p class="FAIL">{{.O.Err}}</p>{{end}}
{{.Timeline}}
{{if .Zoom}}<p class="small">Close-up of the first violation, at {{.ZoomAt}}:</p>
{{.Zoom}}{{end}}
{{if .Violations}}<ul class="v">{{range .Violations}}<li>{{.}}</li>{{end}}{{if .More}}<li>… and {{.More}} more</li>{{end}}</ul>{{end}}
</section>
{{end}}
</body></html>
`))
