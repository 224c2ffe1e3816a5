package conform

import (
	"testing"
)

// FuzzApply: no pattern, replacement, format or value makes Compile or
// Apply panic; a spec either compiles or is refused with an error, and a
// compiled one either maps a value or says why not.
//
//	go test ./conform -run '^$' -fuzz FuzzApply -fuzztime 60s
func FuzzApply(f *testing.F) {
	f.Add(`^([0-9]+)(?:.*)`, `$1`, `$1-$2 $3`, "123 MAPLE ST")
	f.Add(`(?P<n>\d+)\s+(?<=\d )(\w+)`, `\g<n>/\2`, `foo $1$2-$3 bar`, "12 ab")
	f.Add(`(?i)^(?:\s*(\d+-?[A-Z])\s+)?(.+?)(?:\s+#.+)?$`, `${2}0\t\&`, `$0$99`, "12-A Elm # 4\x1c")
	f.Add(`x*`, `-`, `$`, "abxd")
	f.Add(`(\d+)`, `$1`, `$1`, "12\xff MAIN ST")
	f.Add(`(\w+)\Z{,3}[]a-[b]`, `\0\12\g<0>`, `$1.0`, "٣٤ x²\n")
	f.Fuzz(fuzzOne)
}

func fuzzOne(t *testing.T, pattern, replace, format, value string) {
	for _, fn := range []map[string]any{
		{"function": "regexp", "field": "A", "pattern": pattern, "replace": replace},
		{"function": "regexp", "field": "A", "pattern": pattern},
		{"function": "format", "fields": []any{"A", "B", "C"}, "format": format},
		{"function": "chain", "variable": "v", "functions": []any{
			map[string]any{"function": "regexp", "field": "A", "pattern": pattern, "replace": replace},
			map[string]any{"function": "remove_postfix", "field": "v", "field_to_remove": "B"},
		}},
	} {
		c, err := Compile(&Spec{Layer: "addresses", Attributes: []Attribute{
			{Column: "street", Value: fn},
			{Column: "number", Value: map[string]any{"function": "prefixed_number", "field": "A"}},
			{Column: "unit", Value: map[string]any{"function": "postfixed_unit", "field": "A"}},
		}})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			continue
		}
		out, err := c.Apply(map[string]any{"A": value, "B": format, "C": value})
		if err == nil && len(out) != len(layers["addresses"]) {
			t.Fatalf("%d columns", len(out))
		}
	}
}
