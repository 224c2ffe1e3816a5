// Package jsonscan holds the JSON scanning primitives that the hand-written
// decoders (geojson, esrijson) share: the whitespace skipper and the number
// parser of their coordinate arrays. Both decoders hand these functions text
// that is already known to be valid JSON (checked by a validator or by a
// json.Decoder), so the primitives split and convert it rather than check
// JSON's grammar; they still check their bounds, so that no input can make
// them panic.
package jsonscan

import "strconv"

// SkipWS returns the index of the first byte of b at or after i that is not
// JSON whitespace (space, tab, newline, carriage return), len(b) if none.
func SkipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// Number parses the number that starts at b[i] (no whitespace before it)
// and returns its value and the index just past it.
//
// It takes the longest run of the bytes a JSON number is made of (digits,
// '-', '+', '.', 'e', 'E') and converts it with strconv.ParseFloat, so on a
// valid JSON number it yields what encoding/json does, with one exception:
// a number beyond float64 is ±Inf with an error wrapping strconv.ErrRange
// (encoding/json refuses it), and each caller chooses whether to keep it.
// Any other error (no number at b[i], or text that ParseFloat refuses) is
// ParseFloat's *strconv.NumError, with end still past the run. It does not
// check JSON's number grammar: it accepts some forms JSON forbids ("+1",
// ".5", "01"), which is why its input must be validated JSON.
func Number(b []byte, i int) (v float64, end int, err error) {
	j := i
	for j < len(b) {
		c := b[j]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			j++
			continue
		}
		break
	}
	// ParseFloat does not keep its argument, so this conversion does not
	// allocate for a number of up to 32 bytes.
	v, err = strconv.ParseFloat(string(b[i:j]), 64)
	return v, j, err
}
