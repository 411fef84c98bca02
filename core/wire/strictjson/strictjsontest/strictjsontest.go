// Package strictjsontest is the other side of the one-reading tests: a body as a provider's
// JSON parser reads it (member names exact, escapes decoded, the last of two equal names wins,
// as Python's json, JavaScript's JSON.parse and Go's maps do), and a stub upstream that keeps
// the bytes it received. A differential test decodes a body the gateway's way, lets the real
// provider adapter send it to the stub, and compares what the gateway priced and authorized
// with what Read finds in the bytes the upstream got.
package strictjsontest

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"modelgateway/core/wire/strictjson"
)

// Read decodes body as a provider does; false when it is not one JSON value. Go's
// encoding/json into a map matches nothing by case (a map has no fields to fold onto) and
// overwrites a repeated name with its last value.
func Read(body []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// Get walks members by name; nil when one is absent or not an object, or the value is null.
func Get(v any, path ...string) any {
	for _, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[name]
	}
	return v
}

// First is the value of the first of the names that is present and not null, as a provider
// that accepts several spellings of one field reads it; nil when none is.
func First(v any, names ...string) any {
	for _, n := range names {
		if x := Get(v, n); x != nil {
			return x
		}
	}
	return nil
}

// Int is the integer a provider takes v for: a number with an integral value (1000 and 1e3
// alike); false for anything else, absent included.
func Int(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// True tells whether v is JSON true.
func True(v any) bool { b, ok := v.(bool); return ok && b }

// String is v as a string, and whether it was one.
func String(v any) (string, bool) { s, ok := v.(string); return s, ok }

// Upstream is a stub provider that keeps the last body it received and answers every request
// with a 400 error in the shape all three protocols' adapters read, so that an adapter returns
// at once after sending.
type Upstream struct {
	URL string

	mu   sync.Mutex
	body []byte
}

// NewUpstream starts the stub for the test's lifetime.
func NewUpstream(tb testing.TB) *Upstream {
	u := &Upstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.body = b
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"stub","type":"invalid_request_error","code":"stub"}}`))
	}))
	tb.Cleanup(srv.Close)
	u.URL = srv.URL
	return u
}

// Received runs send (an adapter's call against u.URL) and returns the body the stub got;
// nil when nothing arrived.
func (u *Upstream) Received(send func()) []byte {
	u.mu.Lock()
	u.body = nil
	u.mu.Unlock()
	send()
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.body
}

// Fields says where a protocol's policy fields are in the body an upstream receives.
type Fields struct {
	// Model is the upstream model's member ("" when the URL names the model).
	Model string
	// Limit is the output limit's spellings, the first present one read (for an object
	// given under two spellings, Parent names both).
	Limit []string
	// Parent holds the spellings of the object the limit is in; empty: the top level.
	Parent []string
	// Stream is the stream flag's member ("" when the URL says it).
	Stream string
	// N is the member of the number of answers ("" when the protocol has none).
	N string
	// Usage is the path of the flag that asks a stream to report its usage, which must read
	// true upstream on a stream (nil when the protocol reports usage unasked).
	Usage []string
	// Items is the member holding the inputs (one, or a list of them) that a local count
	// prices when the upstream reports no usage ("" when none is counted).
	Items string
}

// Decided is what the gateway priced and authorized.
type Decided struct {
	// PublicModel is the model authorized, which the client's body names where it names one
	// ("" when the model comes from elsewhere: the path, a default).
	PublicModel   string
	UpstreamModel string
	MaxOutput     *int64
	Stream        bool
	N             *int32
	// Items is how many inputs were counted (Fields.Items).
	Items int
}

// Compare fails t where the upstream's reading of sent differs from what was decided.
func Compare(t testing.TB, body, sent []byte, f Fields, d Decided) {
	t.Helper()
	got, ok := Read(sent)
	if !ok {
		t.Fatalf("%s: the upstream got no JSON body: %q", body, sent)
	}
	if f.Model != "" {
		if m, _ := String(Get(got, f.Model)); m != d.UpstreamModel {
			t.Errorf("%s: the upstream reads the model %q, not %q", body, m, d.UpstreamModel)
		}
		client, _ := Read(body)
		if m, ok := String(Get(client, f.Model)); ok && m != "" && d.PublicModel != "" && m != d.PublicModel {
			t.Errorf("%s: authorized the model %q, the body names %q", body, d.PublicModel, m)
		}
	}
	if f.Items != "" {
		n := 1
		if list, ok := Get(got, f.Items).([]any); ok {
			n = len(list)
		}
		if n != d.Items {
			t.Errorf("%s: counted %d inputs, the upstream reads %d", body, d.Items, n)
		}
	}
	if len(f.Usage) > 0 && d.Stream && !True(Get(got, f.Usage...)) {
		t.Errorf("%s: a stream whose upstream does not read %s true reports no usage: %s", body, strings.Join(f.Usage, "."), sent)
	}
	if len(f.Limit) > 0 {
		parent := got
		if len(f.Parent) > 0 {
			parent = First(got, f.Parent...)
		}
		limit, has := Int(First(parent, f.Limit...))
		if has != (d.MaxOutput != nil) || has && limit != *d.MaxOutput {
			held := "none"
			if d.MaxOutput != nil {
				held = strconv.FormatInt(*d.MaxOutput, 10)
			}
			t.Errorf("%s: held for an output limit of %s, the upstream reads %d (present %v)", body, held, limit, has)
		}
	}
	if f.Stream != "" {
		if s := True(Get(got, f.Stream)); s != d.Stream {
			t.Errorf("%s: streamed %v, the upstream reads stream %v", body, d.Stream, s)
		}
	}
	if f.N != "" {
		n, has := Int(Get(got, f.N))
		if has != (d.N != nil) || has && n != int64(*d.N) {
			t.Errorf("%s: priced %v answers, the upstream reads n %d (present %v)", body, d.N, n, has)
		}
	}
}

// Members are the JSON names of a struct type's fields (its json tags), prefixed by prefix:
// every member a decoder of that type reads.
func Members(v any, prefix ...string) [][]string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out [][]string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, append(append([]string(nil), prefix...), name))
	}
	return out
}

// WrongKinds is one value of every JSON kind.
var WrongKinds = []string{`7`, `"x"`, `true`, `{"a":1}`, `[1]`, `-1.5`}

// Replace sets the member at path (names, and indices of arrays) in base to raw, or false when
// the path does not lead through base.
func Replace(base, raw string, path []string) (string, bool) {
	var root any
	if json.Unmarshal([]byte(base), &root) != nil {
		return "", false
	}
	var val any
	if json.Unmarshal([]byte(raw), &val) != nil {
		return "", false
	}
	cur := root
	for i, p := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[p] = val
			} else {
				cur = c[p]
			}
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(c) {
				return "", false
			}
			if last {
				c[n] = val
			} else {
				cur = c[n]
			}
		default:
			return "", false
		}
	}
	out, err := json.Marshal(root)
	return string(out), err == nil
}

// goInternals matches what a client must never read in an error: Go type names (a package's
// type, a slice, a map, a sized number type) and the decoder's own words.
var goInternals = regexp.MustCompile(`\[\][*A-Za-z]|\bmap\[|\b(u?int(8|16|32|64)|float(32|64)|interface \{\}|struct \{)|\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\b|\bGo (value|struct|type)\b|\bjson: |\bjsontext: |[Uu]nmarshal`)

// GoInternals reports whether msg shows a Go type name or decoder jargon.
func GoInternals(msg string) bool { return goInternals.MatchString(msg) }

// CheckWrongTypes sets every member at paths of base to a value of every JSON kind and
// decodes it; where decode refuses the body (refusal != ""), the refusal must name no Go
// type. It fails t when nothing was refused at all: the walk must have met its decoder.
func CheckWrongTypes(t testing.TB, base string, paths [][]string, decode func(body []byte) (refusal string)) {
	t.Helper()
	refused := 0
	for _, p := range paths {
		for _, v := range WrongKinds {
			body, ok := Replace(base, v, p)
			if !ok {
				continue
			}
			msg := decode([]byte(body))
			if msg == "" {
				continue
			}
			refused++
			if GoInternals(msg) {
				t.Errorf("%s = %s: the refusal shows Go internals: %s", strings.Join(p, "."), v, msg)
			}
		}
	}
	if refused == 0 {
		t.Fatal("no body was refused: the walk did not reach the decoder")
	}
}

// Fuzz is a route family's differential target. For every body that passes Check (the front
// refuses the rest before decoding) and that decide accepts (the family's decoder: ok false
// when it refuses), send makes the real adapter send the decoded request to the stub, and
// the upstream's reading of the bytes it received must be what decide says was priced and
// authorized.
func Fuzz(f *testing.F, seeds []string, fields Fields, decide func(body []byte) (d Decided, send func(upstreamURL string), ok bool)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	up := NewUpstream(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if strictjson.Check(body) != nil {
			return
		}
		d, send, ok := decide(body)
		if !ok {
			return
		}
		Compare(t, body, up.Received(func() { send(up.URL) }), fields, d)
	})
}
