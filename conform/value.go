package conform

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// pyStr renders a property value as batch-machine sees it: every source is
// extracted to a CSV file first, so a value arrives as Python's str() of
// what the reader produced, and a null as an empty string. A json.Number
// keeps the int/float distinction of the source text ("123" stays "123",
// "123.0" stays "123.0"); a float64 that holds an integer prints as one,
// since that is what an integer column read by GDAL gives, and any other
// float64 prints as Python's repr. Objects and arrays have no CSV form and
// are refused.
func pyStr(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		if x {
			return "True", nil
		}
		return "False", nil
	case json.Number:
		s := string(x)
		if isCanonicalInt(s) {
			return s, nil
		}
		if !strings.ContainsAny(s, ".eE") {
			n, ok := new(big.Int).SetString(s, 10)
			if !ok {
				return "", fmt.Errorf("%q is not a number", s)
			}
			return n.String(), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeErr(err) {
			return "", fmt.Errorf("%q is not a number", s)
		}
		return pyFloatRepr(f), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return strconv.FormatInt(int64(x), 10), nil
		}
		return pyFloatRepr(x), nil
	case float32:
		return pyStr(float64(x))
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10), nil
	case map[string]any:
		return "", fmt.Errorf("an object, not a value")
	case []any:
		return "", fmt.Errorf("an array, not a value")
	default:
		return "", fmt.Errorf("a %T, not a value", v)
	}
}

// isCanonicalInt tells whether s is an integer as Python's str() prints
// it (what JSON's grammar gives but "-0"), so that it needs no parse.
func isCanonicalInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || (d[0] == '0' && (len(d) > 1 || len(s) > 1)) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// pyFloatRepr is Python's repr(float): the shortest digits that read back,
// positional between 1e-4 and 1e16, exponent form (two digits at least)
// outside, and a ".0" on an integral value.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1
	var out string
	if decpt <= -4 || decpt > 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign = "-"
			exp = -exp
		}
		out = fmt.Sprintf("%se%s%02d", m, sign, exp)
	} else if decpt <= 0 {
		out = "0." + strings.Repeat("0", -decpt) + digits
	} else if decpt >= len(digits) {
		out = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
	} else {
		out = digits[:decpt] + "." + digits[decpt:]
	}
	if neg {
		out = "-" + out
	}
	return out
}

// isPySpace is Python's str.isspace for one character: Go's White_Space
// set plus the four information separators \x1c-\x1f.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyStrip is Python's str.strip() without arguments.
func pyStrip(s string) string { return strings.TrimFunc(s, isPySpace) }

// pyFloat is Python's float(s) for a str: surrounding whitespace, a sign,
// digits with single underscores between them, inf, infinity and nan in any
// case. ok is false where Python raises ValueError.
func pyFloat(s string) (float64, bool) {
	s = pyStrip(s)
	if s == "" {
		return 0, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_':
			if i == 0 || i == len(rs)-1 || !unicode.IsDigit(rs[i-1]) || !unicode.IsDigit(rs[i+1]) {
				return 0, false
			}
			continue
		case unicode.IsDigit(r):
			b.WriteRune('0' + rune(digitValue(r)))
		case r == '.' || r == 'e' || r == 'E' || r == '+' || r == '-':
			b.WriteRune(r)
		default:
			return 0, false
		}
	}
	t := b.String()
	if strings.ContainsAny(t, "xXpP") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}

// digitValue is the decimal value of a Unicode decimal digit (category Nd):
// Nd digits come in contiguous runs of ten starting at a zero.
func digitValue(r rune) int {
	for z := r; z >= r-9; z-- {
		if !unicode.IsDigit(z - 1) {
			return int(r-z) % 10
		}
	}
	return int(r-'0') % 10
}

// pyRoundStr is str(round(x)) for a finite float: round half to even, and
// the whole integer however large.
func pyRoundStr(x float64) string {
	r := math.RoundToEven(x)
	if math.Abs(r) < 1<<62 {
		return strconv.FormatInt(int64(r), 10)
	}
	n, _ := new(big.Float).SetFloat64(r).Int(nil)
	return n.String()
}
