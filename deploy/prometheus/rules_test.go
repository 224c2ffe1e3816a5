// Package prometheus holds ingestd's Prometheus alert rules
// (ingestd-rules.yml) and their promtool unit tests; its Go test keeps the
// rules from rotting as metrics are renamed.
package prometheus

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type testFile struct {
	Tests []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func load(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestRulesUseExportedMetrics fails when a rule names an ingestd_ series
// that no Go file of ingestd defines (a metric renamed or removed): the
// rule would never fire again, silently.
func TestRulesUseExportedMetrics(t *testing.T) {
	var rules ruleFile
	load(t, "ingestd-rules.yml", &rules)
	exported := exportedMetrics(t, filepath.Join("..", ".."))
	if len(exported) < 10 {
		t.Fatalf("found only %d metric names in the Go source: %v", len(exported), exported)
	}
	name := regexp.MustCompile(`\bingestd_[a-z0-9_]+`)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range name.FindAllString(r.Expr, -1) {
				n++
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suffix); ok && exported[b] {
						base = b
					}
				}
				if !exported[base] {
					t.Errorf("rule %s uses %s, which ingestd does not export", r.Alert, m)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no ingestd_ metric in the rules")
	}
}

// TestEveryRuleTested fails unless every alert of the rules has, in the
// promtool tests, a case where it fires and one where it does not.
func TestEveryRuleTested(t *testing.T) {
	var rules ruleFile
	var tests testFile
	load(t, "ingestd-rules.yml", &rules)
	load(t, "ingestd-rules.test.yml", &tests)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("alert %s: a firing case %v, a quiet case %v in ingestd-rules.test.yml", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
		}
	}
}

// exportedMetrics returns the ingestd_ metric names written as string
// literals in the module's Go files (tests aside): the Name of every
// Opts and the first argument of every NewDesc.
func exportedMetrics(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	metric := regexp.MustCompile(`^ingestd_[a-z0-9_]+$`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && metric.MatchString(s) {
					out[s] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
