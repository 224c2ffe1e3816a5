package yamlconf

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ExpandEnv replaces ${NAME} with the value of NAME and "$${" with a literal
// "${". A lone "$" is left alone: URLs and filters may contain it. Errors
// name the variable, never a value. A nil lookup finds no variable.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated \"${\" (write \"$${\" for a literal \"${\")")
			}
			name := s[i+2 : i+2+end]
			if !envNamePattern.MatchString(name) {
				return "", fmt.Errorf("bad environment variable name %q in \"${...}\"", name)
			}
			v, ok := lookup(name)
			if !ok {
				return "", fmt.Errorf("environment variable %s is not set", name)
			}
			b.WriteString(v)
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Resolve follows an alias (*anchor) to the node it names.
func Resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// Describe names what n is, for "expected …, found …".
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// Join appends key to the field path path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// QuoteAll quotes each of list, for a message listing the accepted values.
func QuoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}

// Closest returns the known key nearest to key when it is near enough to be
// a typo (case and '_'/'-' differences count little), or "".
func Closest(key string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	best, bestDist := "", -1
	for _, k := range known {
		d := levenshtein(norm(key), norm(k))
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	if limit := max(1, len(key)/3); bestDist >= 0 && bestDist <= limit {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
