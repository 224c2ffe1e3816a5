package conform

import (
	"encoding/json"
	"strings"
	"testing"
)

// Expected values are CPython 3.11's repr(float).
func TestPyFloatRepr(t *testing.T) {
	for _, tt := range []struct {
		f    float64
		want string
	}{
		{123.0, "123.0"}, {0.1, "0.1"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
		{1234567890123456.0, "1234567890123456.0"}, {12345678901234567.0, "1.2345678901234568e+16"},
		{0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.5e-7, "1.5e-07"}, {2.5, "2.5"}, {1e22, "1e+22"},
		{123456789.125, "123456789.125"},
	} {
		if got := pyFloatRepr(tt.f); got != tt.want {
			t.Errorf("pyFloatRepr(%v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}

// TestPyStr: a value as batch-machine's CSV extract leaves it.
func TestPyStr(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{nil, ""}, {"x", "x"}, {true, "True"}, {false, "False"},
		{json.Number("27601"), "27601"}, {json.Number("27601.0"), "27601.0"}, {json.Number("-0"), "0"},
		{json.Number("1e3"), "1000.0"}, {json.Number("123456789012345678901234567890"), "123456789012345678901234567890"},
		{27601.0, "27601"}, {2.5, "2.5"}, {int64(-3), "-3"},
	} {
		got, err := pyStr(tt.v)
		if err != nil || got != tt.want {
			t.Errorf("pyStr(%#v) = %q, %v; want %q", tt.v, got, err, tt.want)
		}
	}
}

// TestMphToKph: expected values are CPython's str(round(float(s) *
// 1.60934)), "" where float() raises ValueError.
func TestMphToKph(t *testing.T) {
	c := mustCompile(t, "layer: centerlines\nspeed: {function: mph_to_kph, field: MPH}")
	for _, tt := range []struct{ in, want string }{
		{"25", "40"}, {" 35 ", "56"}, {"1_000", "1609"}, {"2.5e1", "40"}, {"abc", ""}, {"", ""},
		{"nan", ""}, {"٣٥", "56"}, {"+5", "8"}, {".5", "1"}, {"5.", "8"}, {"1__0", ""}, {"0x10", ""},
	} {
		got, err := c.Apply(map[string]any{"MPH": tt.in})
		if err != nil || got["speed"] != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.in, got["speed"], err, tt.want)
		}
	}
	// Python raises OverflowError on round(-inf), which batch-machine does
	// not catch.
	if _, err := c.Apply(map[string]any{"MPH": "-inf"}); err == nil || !strings.Contains(err.Error(), "speed: mph_to_kph:") {
		t.Errorf("-inf: %v", err)
	}
	// No such property: nothing mapped.
	if got, err := c.Apply(map[string]any{}); err != nil || got["speed"] != "" {
		t.Errorf("missing: %v %v", got, err)
	}
}
