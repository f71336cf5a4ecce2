package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluice-rl/sluice/store"
)

// exported returns every metric name the endpoint can export: the
// collector's descriptions (Raft and snapshot ones included, which a
// single test node does not emit), the key space's figures' metrics, and the runtime and process collectors'
// families, with the series a histogram adds.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	ch := make(chan *prometheus.Desc, 128)
	go func() { NewCollector(nil).Describe(ch); raftCollector{}.Describe(ch); close(ch) }()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names[m[1]] = true
	}
	for _, f := range store.New(1).KeyspaceFigures() {
		if f.Metric != "" {
			names["sluice_"+f.Metric] = true
		}
	}
	fams, err := NewServer().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		names[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY {
			names[f.GetName()+"_count"], names[f.GetName()+"_sum"] = true, true
		}
	}
	// The collectors' histograms.
	for _, h := range []string{"sluice_request_duration_seconds", "sluice_raft_apply_duration_seconds"} {
		names[h+"_bucket"], names[h+"_count"], names[h+"_sum"] = true, true, true
	}
	return names
}

// The dashboard's JSON, as far as the test reads it.
type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Query any `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

var metricName = regexp.MustCompile(`\b(?:sluice|process|go)_[a-z0-9_]+\b`)

func TestGrafanaDashboardQueriesOnlyExportedMetrics(t *testing.T) {
	b, err := os.ReadFile("../deploy/grafana/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard does not parse: %v", err)
	}
	names := exported(t)
	exprs := map[string]string{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			exprs[p.Title+": "+tg.Expr] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && strings.Contains(q, "(") {
			exprs["variable: "+q] = q
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("%d queries; the dashboard lost its panels", len(exprs))
	}
	for where, e := range exprs {
		found := metricName.FindAllString(e, -1)
		if len(found) == 0 {
			t.Errorf("%s names no metric", where)
		}
		for _, n := range found {
			if !names[n] {
				t.Errorf("%s queries %s, which sluice does not export", where, n)
			}
		}
	}
	// The panels the dashboard promises.
	for _, want := range []string{"sluice_decisions_total", "sluice_request_duration_seconds_bucket", "sluice_keys",
		"process_resident_memory_bytes", "sluice_raft_role", "sluice_raft_applied_index"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}
