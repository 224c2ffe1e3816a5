package conform

import (
	"strings"
	"testing"
)

// The expected values below are CPython 3.11's re.search and re.sub on the
// same pattern and input; each case is one place where Python's dialect and
// regexp2's (or Go's) part ways, or could.
func TestPythonDialectSearch(t *testing.T) {
	for _, tt := range []struct{ pattern, in, want string }{
		{`(?P<a>\d+)-(\w+)-(?P<b>\d+)`, "12-ab-34", "12ab34"},
		{`(?<=N )(\w+)`, "123 N MAIN", "MAIN"},
		{`^(\d+)(?= )`, "123 MAIN", "123"},
		{`(?<!\d)(\d{3})\b`, "x1234 567", "567"},
		{`(?P<x>a)(?P=x)(b)`, "caab", "ab"},
		{`(\w+)\Z`, "abc\n", ""}, // \Z is the very end in Python
		{`(\w+)$`, "abc\n", "abc"},
		{`^(\d{,2})`, "1234", "12"}, // {,n} is a quantifier
		{`(\s)`, "a\x1cb", "\x1c"},  // str.isspace() includes \x1c-\x1f
		{`(\w+)`, "x²y", "x²y"},     // numbers of any kind are word characters
		{`^(\d+)`, "٣٤ x", "٣٤"},    // \d is any decimal digit
		{`(?i)^(main)`, "MAIN ST", "MAIN"},
		{`(?i)^(\d+[A-Z])`, "12ſ x", "12ſ"}, // IGNORECASE: long s is s, dotless i is i
		{`(?i)(suite)`, "ſuıte", "ſuıte"},
		{`(?i)([^a-z]+)`, "ſ1", "1"},
		{`(?i)(k)`, "\u212a", "\u212a"},
		{`(?i:(s))(S)`, "ſS", "ſS"}, // scoped flags scope the folding
		{`(?i:s)(s)`, "ſſ", ""},
		{`(?-i:(s))`, "ſ", ""},
		{`(\w+)\b`, "x² y", "x²"}, // \b on Python's word characters
		{`\b(\w)`, "é\u0301a", "é"},
		{`(x\B.)`, "x² ", "x²"},
		{`[\b](a)`, "\x08a", "a"},
		{`^(?:(\d+)|(\w+)) (\w+)`, "MAIN ST", "MAINST"}, // a group that did not take part is left out
		{`(a)(?#comment)(b)`, "ab", "ab"},
		{`(a)\1(\101)`, "aaA", "aA"}, // three octal digits are a character
		{`(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\10(x)`, "abcdefghijjx", "abcdefghijx"},
		{`(?ix:(A)) (b)`, "a b", "ab"},
		{`(?>(a+))(b)`, "aab", "aab"},
		{`(a)?(?(1)(b)|(c))`, "c", "c"},
		{`([]a])`, "x]", "]"}, // ] first in a class is a literal
		{`(?x) (\d+) \s (\w+)`, "12 AB", "12AB"},
		{`(fake)`, "123 MAPLE ST", ""},
		{`^[0-9]+`, "123 MAPLE ST", ""}, // no groups: nothing to join
	} {
		c := mustCompileFunc(t, map[string]any{"function": "regexp", "field": "A", "pattern": tt.pattern})
		got, err := c.Apply(map[string]any{"A": tt.in})
		if err != nil {
			t.Errorf("%q on %q: %v", tt.pattern, tt.in, err)
			continue
		}
		if got["city"] != tt.want {
			t.Errorf("%q on %q: got %q, want %q", tt.pattern, tt.in, got["city"], tt.want)
		}
	}
}

func TestPythonDialectSub(t *testing.T) {
	for _, tt := range []struct{ pattern, replace, in, want string }{
		// The three re.sub cases of batch-machine's test_convert_regexp_replace.
		{`hello (world)`, `goodbye $1`, "hello world", "goodbye world"},
		{`(hello) (world)`, `goodbye $2`, "hello world", "goodbye world"},
		{`he(ll)o`, `he$1$1o`, "hello", "hellllo"},
		{`x*`, `-`, "abxd", "-a-b--d-"}, // an empty match right after a non-empty one counts
		{`(a)|(b)`, `[\2]`, "ab", "[][b]"},
		{`(?P<a>\d+)-(\w+)-(?P<b>\d+)`, `\g<b>/\2/\g<a>`, "12-ab-34", "34/ab/12"},
		{`^(\d+) (.*)$`, `$2 $1`, "12 MAIN", "MAIN 12"},
		{`^(\d+) (.*)$`, `\2 \1`, "12 MAIN", "MAIN 12"},
		{`(\d)`, `${1}0`, "a1b", "a10b"},
		{`(\d)`, `<\t\&>`, "a1", "a<\t\\&>"},
		{`\b`, `|`, "ab cd", "|ab| |cd|"},
		{`(?<=\d)(?=(\d{3})+$)`, `,`, "1234567", "1,234,567"},
		{`(a*)`, `<\1>`, "baac", "<>b<aa><>c<>"},
	} {
		c := mustCompileFunc(t, map[string]any{"function": "regexp", "field": "A", "pattern": tt.pattern, "replace": tt.replace})
		got, err := c.Apply(map[string]any{"A": tt.in})
		if err != nil {
			t.Errorf("%q %q on %q: %v", tt.pattern, tt.replace, tt.in, err)
			continue
		}
		if got["city"] != tt.want {
			t.Errorf("%q %q on %q: got %q, want %q", tt.pattern, tt.replace, tt.in, got["city"], tt.want)
		}
	}
}

// TestPythonDialectRefusals: what Python refuses, Compile refuses, in
// words naming the column, the function and what is wrong.
func TestPythonDialectRefusals(t *testing.T) {
	for _, tt := range []struct {
		fn   map[string]any
		want string
	}{
		{map[string]any{"function": "regexp", "field": "A", "pattern": `\p{L}`}, `conform: city: regexp: pattern "\\p{L}": bad escape \p`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `(?<n>x)`}, `named groups are written (?P<name>...)`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `(`}, `conform: city: regexp: pattern "(":`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `(a)`, "replace": `\3`}, `replace "\\3": replacement refers to group 3, the pattern has 1`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `(a)`, "replace": `\q`}, `bad escape \q in the replacement`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `(a)`, "replace": `\g<z>`}, `replacement refers to unknown group "z"`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `(?r)a`}, `unknown extension (?r`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `(?i`}, `missing ) after (?`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `\1(a)`}, `\1 refers to a group not closed before it`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `(a\1)`}, `\1 refers to a group not closed before it`},
		{map[string]any{"function": "regexp", "field": "A", "pattern": `a(?i)b`}, `global flags such as (?i) must start the pattern`},
		{map[string]any{"function": "regexp", "field": "A"}, `conform: city: regexp: "pattern" is missing`},
		{map[string]any{"function": "regexp", "pattern": "x"}, `conform: city: regexp: "field" is missing`},
		{map[string]any{"function": "regex", "field": "A"}, `conform: city: regex: no such function (there are chain, constant,`},
		{map[string]any{"field": "A"}, `conform: city: a function object needs a "function" key`},
		{map[string]any{"function": "join", "fields": "A"}, `conform: city: join: "fields" is "A", not a list of field names`},
		{map[string]any{"function": "format", "fields": []any{"A"}}, `conform: city: format: "format" is missing`},
		{map[string]any{"function": "remove_prefix", "field": "A"}, `remove_prefix: "field_to_remove" is missing`},
		{map[string]any{"function": "chain", "functions": []any{map[string]any{"function": "nope"}}}, `conform: city: chain: nope: function 1: no such function`},
		{map[string]any{"function": "chain"}, `conform: city: chain: "functions" is missing`},
		{map[string]any{"function": "chain", "functions": []any{map[string]any{"function": "constant", "value": "x"}, map[string]any{"field": "A"}}}, `conform: city: chain: function 2: a function object needs a "function" key`},
		{map[string]any{"function": "map", "field": "A", "mapping": []any{"x"}}, `map: "mapping" is a list, not an object`},
		{map[string]any{"function": "constant"}, `constant: "value" is missing`},
	} {
		_, err := Compile(&Spec{Layer: "addresses", Attributes: []Attribute{{Column: "city", Value: tt.fn}}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: got %v, want %q", tt.fn, err, tt.want)
		}
	}
}

func mustCompileFunc(t testing.TB, fn map[string]any) *Conform {
	t.Helper()
	c, err := Compile(&Spec{Layer: "addresses", Attributes: []Attribute{{Column: "city", Value: fn}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
