package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// promExpr is one PromQL expression found in the monitoring files, with
// where it came from and what it is for (alert, record or panel title).
type promExpr struct {
	source  string
	context string
	expr    string
}

// monitoringSet is what the monitoring directory holds, parsed.
type monitoringSet struct {
	exprs      []promExpr
	recorded   map[string]bool // names written by recording rules
	alerts     map[string]bool // alert names
	ruleGroups map[string][]monitoringv1.RuleGroup
	promTests  []doc
	errs       []error
}

// collectMonitoring reads every YAML and JSON file of the files: PodMonitors
// and PrometheusRules (strictly decoded by checkManifestFiles), Prometheus
// rule files (strictly into prometheus-operator's RuleGroup, the same
// format), promtool test files, and Grafana dashboards (JSON files, and
// JSON in ConfigMaps).
func collectMonitoring(t *testing.T, files []string) *monitoringSet {
	t.Helper()
	s := &monitoringSet{recorded: map[string]bool{}, alerts: map[string]bool{}, ruleGroups: map[string][]monitoringv1.RuleGroup{}}
	var yamlFiles []string
	for _, f := range files {
		if strings.HasSuffix(f, ".json") {
			s.addDashboard(f, mustRead(t, f))
			continue
		}
		yamlFiles = append(yamlFiles, f)
	}
	errs, byClass, objs := checkManifestFiles(t, yamlFiles)
	s.errs = append(s.errs, errs...)
	for _, o := range objs {
		switch o := o.(type) {
		case *monitoringv1.PrometheusRule:
			src := "PrometheusRule " + o.Name
			s.addGroups(src, o.Spec.Groups)
		case *corev1.ConfigMap:
			for k, v := range o.Data {
				if strings.HasSuffix(k, ".json") {
					s.addDashboard(fmt.Sprintf("ConfigMap %s key %s", o.Name, k), []byte(v))
				}
			}
		}
	}
	for _, d := range byClass[classPromRules] {
		var spec monitoringv1.PrometheusRuleSpec
		if err := yaml.UnmarshalStrict(d.data, &spec); err != nil {
			s.errs = append(s.errs, fmt.Errorf("%s: Prometheus rule file: %w", d.source, err))
			continue
		}
		s.addGroups(d.source, spec.Groups)
	}
	s.promTests = byClass[classPromTest]
	return s
}

func (s *monitoringSet) addGroups(src string, groups []monitoringv1.RuleGroup) {
	s.ruleGroups[src] = groups
	if len(groups) == 0 {
		s.errs = append(s.errs, fmt.Errorf("%s: no rule groups", src))
	}
	for _, g := range groups {
		for i, r := range g.Rules {
			ctx := r.Alert
			switch {
			case r.Record != "" && r.Alert != "":
				s.errs = append(s.errs, fmt.Errorf("%s: group %s rule %d is both a record and an alert", src, g.Name, i))
			case r.Record != "":
				ctx = r.Record
				s.recorded[r.Record] = true
			case r.Alert != "":
				s.alerts[r.Alert] = true
			default:
				s.errs = append(s.errs, fmt.Errorf("%s: group %s rule %d has neither record nor alert", src, g.Name, i))
			}
			s.exprs = append(s.exprs, promExpr{source: fmt.Sprintf("%s group %s", src, g.Name), context: ctx, expr: r.Expr.String()})
		}
	}
}

// addDashboard walks a Grafana dashboard's JSON for "expr" strings (panel
// targets) and for label_values(...) variable queries.
func (s *monitoringSet) addDashboard(src string, b []byte) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		s.errs = append(s.errs, fmt.Errorf("%s: not JSON: %w", src, err))
		return
	}
	n := len(s.exprs)
	walkJSON(v, "", func(title, key string, val any) {
		str, ok := val.(string)
		if !ok || strings.TrimSpace(str) == "" {
			return
		}
		switch key {
		case "expr":
			s.exprs = append(s.exprs, promExpr{source: src, context: title, expr: str})
		case "query", "definition":
			if m := labelValuesRE.FindStringSubmatch(str); m != nil && m[1] != "" {
				s.exprs = append(s.exprs, promExpr{source: src, context: "variable " + title, expr: m[1]})
			}
		}
	})
	if len(s.exprs) == n {
		s.errs = append(s.errs, fmt.Errorf("%s: a dashboard with no PromQL expression", src))
	}
}

// labelValuesRE takes the series selector of a Grafana label_values(selector, label).
var labelValuesRE = regexp.MustCompile(`^\s*label_values\(\s*(.*?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$`)

// walkJSON calls f for every key/value under v; title is the nearest
// enclosing object's "title" (or "name"), for messages.
func walkJSON(v any, title string, f func(title, key string, val any)) {
	switch t := v.(type) {
	case map[string]any:
		if s, ok := t["title"].(string); ok {
			title = s
		} else if s, ok := t["name"].(string); ok {
			title = s
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f(title, k, t[k])
			walkJSON(t[k], title, f)
		}
	case []any:
		for _, e := range t {
			walkJSON(e, title, f)
		}
	}
}

// Grafana's variables, substituted before parsing: the interval ones by a
// duration, others by a plain word (valid inside a label matcher's string
// and as a label name).
var (
	grafanaIntervalRE = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)\}?(_ms|_s)?`)
	grafanaVarRE      = regexp.MustCompile(`\$\{[A-Za-z0-9_]+(:[A-Za-z0-9_]+)?\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[A-Za-z0-9_]+\]\]`)
)

func substituteGrafana(expr string) string {
	expr = grafanaIntervalRE.ReplaceAllStringFunc(expr, func(m string) string {
		switch {
		case strings.HasSuffix(m, "_ms"):
			return "300000"
		case strings.HasSuffix(m, "_s"):
			return "300"
		}
		return "5m"
	})
	return grafanaVarRE.ReplaceAllString(expr, "x")
}

var promParser = parser.NewParser(parser.Options{})

// exprMetricNames parses an expression and returns the metric names it
// selects.
func exprMetricNames(expr string) ([]string, error) {
	e, err := promParser.ParseExpr(substituteGrafana(expr))
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			for _, m := range vs.LabelMatchers {
				if m.Name == "__name__" && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
		}
		if name == "" {
			names = append(names, "{"+vs.String()+"}")
		} else {
			names = append(names, name)
		}
		return nil
	})
	return names, nil
}

// alwaysKnown are series every Prometheus has.
var alwaysKnown = map[string]bool{"up": true, "ALERTS": true, "ALERTS_FOR_STATE": true}

// checkExprs parses every expression and checks each metric it names is
// one slotgate exports, one a recording rule writes, or `up`; engine
// metrics only where the alert, record or panel is about the engine.
func checkExprs(exprs []promExpr, slotgate, engine, recorded map[string]bool) []error {
	errs, _ := checkExprsNotes(exprs, slotgate, engine, recorded)
	return errs
}

// checkExprsNotes is checkExprs, also returning the engine metrics read
// where that was allowed.
func checkExprsNotes(exprs []promExpr, slotgate, engine, recorded map[string]bool) (errs []error, engineReads []string) {
	for _, e := range exprs {
		names, err := exprMetricNames(e.expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q: PromQL does not parse: %v\n  expression: %s", e.source, e.context, err, e.expr))
			continue
		}
		for _, n := range names {
			switch {
			case slotgate[n], recorded[n], alwaysKnown[n]:
			case engine[n] && strings.Contains(strings.ToLower(e.context), "engine"):
				engineReads = append(engineReads, fmt.Sprintf("%s: %q reads %s", e.source, e.context, n))
			case engine[n]:
				errs = append(errs, fmt.Errorf("%s: %q reads the engine's metric %s, but its name does not say it is about the engine; read slotgate's own metrics", e.source, e.context, n))
			default:
				errs = append(errs, fmt.Errorf("%s: %q names %s, which slotgate does not export", e.source, e.context, n))
			}
		}
	}
	return errs, engineReads
}

// promtoolTests mirrors promtool's unit-test file format (cmd/promtool
// unittest.go: unitTestFile, testGroup, series, alertTestCase,
// promqlTestCase), so that a strict decode catches misspelt fields.
type promtoolTests struct {
	RuleFiles          []string          `json:"rule_files"`
	EvaluationInterval string            `json:"evaluation_interval,omitempty"`
	GroupEvalOrder     []string          `json:"group_eval_order,omitempty"`
	FuzzyCompare       bool              `json:"fuzzy_compare,omitempty"`
	Tests              []promtoolTestGrp `json:"tests"`
}

type promtoolTestGrp struct {
	Name            string            `json:"name,omitempty"`
	Interval        string            `json:"interval,omitempty"`
	InputSeries     []promtoolSeries  `json:"input_series"`
	AlertRuleTests  []promtoolAlert   `json:"alert_rule_test,omitempty"`
	PromqlExprTests []promtoolPromQL  `json:"promql_expr_test,omitempty"`
	ExternalLabels  map[string]string `json:"external_labels,omitempty"`
	ExternalURL     string            `json:"external_url,omitempty"`
	TestGroupName   string            `json:"test_group_name,omitempty"`
	FuzzyCompare    bool              `json:"fuzzy_compare,omitempty"`
	StartTimestamp  any               `json:"start_timestamp,omitempty"`
}

type promtoolSeries struct {
	Series string `json:"series"`
	Values string `json:"values"`
}

type promtoolAlert struct {
	EvalTime  string `json:"eval_time"`
	Alertname string `json:"alertname"`
	ExpAlerts []struct {
		ExpLabels      map[string]string `json:"exp_labels"`
		ExpAnnotations map[string]string `json:"exp_annotations"`
	} `json:"exp_alerts"`
}

type promtoolPromQL struct {
	Expr       string `json:"expr"`
	EvalTime   string `json:"eval_time"`
	ExpSamples []struct {
		Labels    string `json:"labels"`
		Value     any    `json:"value"`
		Histogram string `json:"histogram,omitempty"`
	} `json:"exp_samples"`
}

// checkPromTests decodes promtool test files strictly, checks their
// rule_files exist, their series and expressions parse, and the alerts
// they test are defined.
func checkPromTests(t *testing.T, s *monitoringSet) []error {
	t.Helper()
	var errs []error
	for _, d := range s.promTests {
		var pt promtoolTests
		if err := yaml.UnmarshalStrict(d.data, &pt); err != nil {
			errs = append(errs, fmt.Errorf("%s: promtool test file: %w", d.source, err))
			continue
		}
		file := strings.SplitN(d.source, "#", 2)[0]
		if len(pt.RuleFiles) == 0 || len(pt.Tests) == 0 {
			errs = append(errs, fmt.Errorf("%s: no rule_files or no tests", d.source))
		}
		for _, rf := range pt.RuleFiles {
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), rf)); err != nil {
				errs = append(errs, fmt.Errorf("%s: rule_files: %v", d.source, err))
			}
		}
		for _, tg := range pt.Tests {
			for _, in := range tg.InputSeries {
				if _, _, err := promParser.ParseSeriesDesc(in.Series + " " + in.Values); err != nil {
					errs = append(errs, fmt.Errorf("%s: input series %q %q: %v", d.source, in.Series, in.Values, err))
				}
			}
			for _, a := range tg.AlertRuleTests {
				if !s.alerts[a.Alertname] {
					errs = append(errs, fmt.Errorf("%s: alert_rule_test names alert %q, which no rule defines", d.source, a.Alertname))
				}
			}
			for _, p := range tg.PromqlExprTests {
				if _, err := promParser.ParseExpr(p.Expr); err != nil {
					errs = append(errs, fmt.Errorf("%s: promql_expr_test %q: %v", d.source, p.Expr, err))
				}
			}
		}
	}
	return errs
}

// checkRuleCopies reports when the plain rule file and the PrometheusRule
// hold different rules: promtool tests the one, Kubernetes runs the other.
func checkRuleCopies(s *monitoringSet) []error {
	var srcs []string
	for src := range s.ruleGroups {
		srcs = append(srcs, src)
	}
	sort.Strings(srcs)
	var errs []error
	for i := 1; i < len(srcs); i++ {
		a, b := s.ruleGroups[srcs[0]], s.ruleGroups[srcs[i]]
		if !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			errs = append(errs, fmt.Errorf("the rule groups of %s and %s differ:\n  %s\n  %s", srcs[0], srcs[i], ja, jb))
		}
	}
	return errs
}

func monitoringFiles(t *testing.T, dir string) []string {
	t.Helper()
	return requireFiles(t, dir, ".yaml", ".yml", ".json")
}

// TestMonitoring: the PodMonitor and PrometheusRule decode strictly into
// prometheus-operator's types; every alert, recording and dashboard
// expression parses with Prometheus's own PromQL parser and names only
// metrics slotgate exports (scraped from a running slotgate); the promtool
// tests are well-formed; the rule file and the PrometheusRule agree.
func TestMonitoring(t *testing.T) {
	files := monitoringFiles(t, monitoringDir)
	s := collectMonitoring(t, files)
	reportErrs(t, "", s.errs)
	reportErrs(t, "", checkPromTests(t, s))
	reportErrs(t, "", checkRuleCopies(s))
	var kinds []string
	// The PodMonitor may live with the workload (kustomize/base).
	base, _ := walkFiles(kustomizeBase, ".yaml", ".yml")
	for _, f := range append(files, base...) {
		for _, d := range readDocs(t, []string{f}) {
			if tm, err := readTypeMeta(d); err == nil && tm.Kind != "" {
				kinds = append(kinds, tm.Kind)
			}
		}
	}
	for _, want := range []string{"PodMonitor", "PrometheusRule", "ConfigMap"} {
		if !strings.Contains(strings.Join(kinds, " "), want) {
			t.Errorf("deploy/%s (and deploy/%s) hold no %s", monitoringDir, kustomizeBase, want)
		}
	}
	reportErrs(t, "", checkDashboardCopies(t, files))
	if len(s.exprs) == 0 {
		t.Fatal("no PromQL expression found")
	}
	slotgate, engine := exportedMetrics(t)
	errs, engineReads := checkExprsNotes(s.exprs, slotgate, engine, s.recorded)
	reportErrs(t, "", errs)
	t.Logf("%d expressions checked; %d read the engine's own metrics (allowed: their title says engine)", len(s.exprs), len(engineReads))
	for _, r := range engineReads {
		t.Log(r)
	}
}

func TestMonitoringFixtures(t *testing.T) {
	slotgate := exposedNames("# TYPE slotgate_requests_total counter\n# TYPE slotgate_queue_wait_seconds histogram\n# TYPE slotgate_engine_metrics_stale gauge\n# TYPE dynamo_request_queue gauge\n")
	engine := map[string]bool{"vllm:num_requests_running": true}
	t.Run("valid", func(t *testing.T) {
		s := collectMonitoring(t, monitoringFiles(t, "testdata/monitoring/valid"))
		reportErrs(t, "", s.errs)
		reportErrs(t, "", checkPromTests(t, s))
		reportErrs(t, "", checkRuleCopies(s))
		reportErrs(t, "", checkExprs(s.exprs, slotgate, engine, s.recorded))
		if len(s.exprs) < 6 {
			t.Errorf("want at least 6 expressions in the valid fixtures, got %d", len(s.exprs))
		}
	})
	t.Run("invalid", func(t *testing.T) {
		s := collectMonitoring(t, monitoringFiles(t, "testdata/monitoring/invalid"))
		errs := append(s.errs, checkPromTests(t, s)...)
		errs = append(errs, checkRuleCopies(s)...)
		errs = append(errs, checkExprs(s.exprs, slotgate, engine, s.recorded)...)
		expectErrs(t, errs,
			`PromQL does not parse`, // rate(x[5m]
			`names slotgate_no_such_metric, which slotgate does not export`, // unknown metric
			`reads the engine's metric vllm:num_requests_running`,           // engine metric, no "engine" in title
			`unknown field "exprr"`, // rule file typo
			`alert_rule_test names alert "NoSuchAlert"`,
			`unknown field "input_serie"`,
			`differ`,
		)
	})
}

// checkDashboardCopies reports a ConfigMap key named like a dashboard file
// beside it (slotgate-dashboard.json) whose JSON differs from the file's.
func checkDashboardCopies(t *testing.T, files []string) []error {
	t.Helper()
	dashboards := map[string]any{}
	for _, f := range files {
		if strings.HasSuffix(f, ".json") {
			var v any
			if json.Unmarshal(mustRead(t, f), &v) == nil {
				dashboards[filepath.Base(f)] = v
			}
		}
	}
	var errs []error
	var yamlFiles []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".json") {
			yamlFiles = append(yamlFiles, f)
		}
	}
	_, _, objs := checkManifestFiles(t, yamlFiles)
	for _, o := range objs {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		for k, v := range cm.Data {
			want, ok := dashboards[k]
			if !ok {
				continue
			}
			var got any
			if err := json.Unmarshal([]byte(v), &got); err != nil || !reflect.DeepEqual(got, want) {
				errs = append(errs, fmt.Errorf("ConfigMap %s key %s is not the JSON of %s beside it", cm.Name, k, k))
			}
		}
	}
	return errs
}
