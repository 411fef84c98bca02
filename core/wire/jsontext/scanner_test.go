package jsontext

import (
	"math"
	"testing"
)

func TestScannerReadsValues(t *testing.T) {
	t.Parallel()
	raws := []struct{ text, want string }{
		{`"a\"]}" ,`, `"a\"]}"`},
		{` {"a":["}",{"b":"\\"}]} ]`, `{"a":["}",{"b":"\\"}]}`},
		{`[[],{}]`, `[[],{}]`},
		{`-12.5e+3}`, `-12.5e+3`},
		{`true,`, `true`},
		{`null`, `null`},
	}
	for _, r := range raws {
		if got := string(NewScanner([]byte(r.text)).Raw()); got != r.want {
			t.Errorf("Raw of %s: %s, want %s", r.text, got, r.want)
		}
	}
	ints := []struct {
		text string
		bits uint
		want int64
		ok   bool
	}{
		{"0", 64, 0, true},
		{"-0", 64, 0, true},
		{"9223372036854775807", 64, math.MaxInt64, true},
		{"-9223372036854775808", 64, math.MinInt64, true},
		{"9223372036854775808", 64, 0, false},
		{"-9223372036854775809", 64, 0, false},
		{"2147483647", 32, math.MaxInt32, true},
		{"-2147483648", 32, math.MinInt32, true},
		{"2147483648", 32, 0, false},
		{"-", 64, 0, false},
		{`"1"`, 64, 0, false},
	}
	for _, c := range ints {
		got, ok := NewScanner([]byte(c.text)).Integer(c.bits)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("Integer(%d) of %s: %d %v, want %d %v", c.bits, c.text, got, ok, c.want, c.ok)
		}
	}
	for text, want := range map[string]float64{"0.5": 0.5, "-1e-3": -0.001, "1E2": 100} {
		if got, ok := NewScanner([]byte(text)).Float(); !ok || got != want {
			t.Errorf("Float of %s: %v %v", text, got, ok)
		}
	}
	for _, text := range []string{"1e400", `"1"`, "true"} {
		if _, ok := NewScanner([]byte(text)).Float(); ok {
			t.Errorf("Float read %s", text)
		}
	}
}

func TestScannerReadsObjectsAndArrays(t *testing.T) {
	t.Parallel()
	s := NewScanner([]byte(` { "a" : [ 1 , 2 ] , "b":{} ,"c":"x"} `))
	var keys []string
	var sum int64
	ok := s.Object(func(key []byte) bool {
		keys = append(keys, string(key))
		switch string(key) {
		case "a":
			return s.Array(func() bool { n, ok := s.Integer(64); sum += n; return ok })
		case "b":
			return s.Object(func([]byte) bool { return false })
		}
		_, ok := s.String()
		return ok
	})
	if !ok || len(keys) != 3 || keys[0] != "a" || keys[2] != "c" || sum != 3 {
		t.Errorf("read %v, keys %q, sum %d", ok, keys, sum)
	}
	// A key with an escape is not matched as written: the read stops.
	if NewScanner([]byte(`{"\u0061":1}`)).Object(func([]byte) bool { return true }) {
		t.Error("an escaped key was read")
	}
	// The field must read the value: one that does not leaves no separator next.
	if NewScanner([]byte(`{"a":1}`)).Object(func([]byte) bool { return true }) {
		t.Error("an object was read past an unread value")
	}
	for _, text := range []string{`[1,2`, `{"a":1`, `"s"`} {
		if NewScanner([]byte(text)).Object(func([]byte) bool { return true }) {
			t.Errorf("read %s as an object", text)
		}
	}
}

func TestSeenRefusesARepeatedKey(t *testing.T) {
	t.Parallel()
	var k Seen
	if !k.First(0) || !k.First(63) || k.Has(1) {
		t.Fatal("new keys were not taken as first")
	}
	if k.First(0) || k.First(63) || !k.Has(63) {
		t.Error("a repeated key was taken as first")
	}
}
