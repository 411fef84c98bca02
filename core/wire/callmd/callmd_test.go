package callmd

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
)

// Value reads what metadata.ValueFromIncomingContext reads, from a context of this package,
// one derived from it, and one with gRPC's metadata alone; gRPC's readers see the same
// metadata.
func TestValueIsWhatGRPCReads(t *testing.T) {
	t.Parallel()
	md := metadata.MD{
		"authorization": {"Bearer sk-1"},
		"x-request-id":  {"req-1", "req-2"},
		"X-Mixed-Case":  {"mixed"},
		"empty":         {},
	}
	type ctxKey struct{}
	own := NewIncomingContext(context.Background(), md)
	derived, cancel := context.WithCancel(context.WithValue(own, ctxKey{}, 1))
	defer cancel()
	contexts := map[string]context.Context{
		"made here":   own,
		"derived":     derived,
		"gRPC's only": metadata.NewIncomingContext(context.Background(), md),
		"no metadata": context.Background(),
	}
	for name, ctx := range contexts {
		for _, key := range []string{"authorization", "x-request-id", "x-mixed-case", "empty", "absent"} {
			want := ""
			if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
				want = v[0]
			}
			if got := Value(ctx, key); got != want {
				t.Errorf("%s, %s: %q, gRPC reads %q", name, key, got, want)
			}
		}
	}
	if got := Value(own, "x-mixed-case"); got != "mixed" {
		t.Errorf("a key that differs in case: %q", got)
	}
	if got, _ := metadata.FromIncomingContext(derived); !reflect.DeepEqual(got, metadata.MD{
		"authorization": {"Bearer sk-1"}, "x-request-id": {"req-1", "req-2"}, "x-mixed-case": {"mixed"}, "empty": {},
	}) {
		t.Errorf("gRPC's incoming metadata: %v", got)
	}
	if derived.Value(ctxKey{}) != 1 {
		t.Error("a value of the parent context is lost")
	}
}

// A context of this package is still a child of its parent: cancelling the parent reaches
// contexts derived from it.
func TestCancellationPassesThrough(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithCancel(context.Background())
	child, stop := context.WithCancel(NewIncomingContext(parent, metadata.MD{}))
	defer stop()
	cancel()
	<-child.Done()
	if child.Err() != context.Canceled {
		t.Errorf("%v", child.Err())
	}
}

// Outgoing takes back the metadata of a context NewOutgoingContext made, through derived
// contexts, and gRPC's readers see the same; a plain gRPC context has none to take.
func TestOutgoing(t *testing.T) {
	t.Parallel()
	md := metadata.MD{"authorization": {"Bearer sk-1"}, "x-request-id": {"req-1"}}
	ctx, cancel := context.WithCancel(NewOutgoingContext(context.Background(), md))
	defer cancel()
	if got, ok := Outgoing(context.WithoutCancel(ctx)); !ok || !reflect.DeepEqual(got, md) {
		t.Errorf("Outgoing: %v %v", got, ok)
	}
	if got, _ := metadata.FromOutgoingContext(ctx); !reflect.DeepEqual(got, md) {
		t.Errorf("gRPC's outgoing metadata: %v", got)
	}
	if _, ok := Outgoing(metadata.NewOutgoingContext(context.Background(), md)); ok {
		t.Error("a plain gRPC context carried metadata")
	}
	if Value(ctx, "authorization") != "" {
		t.Error("outgoing metadata read as incoming")
	}
	if _, ok := metadata.FromIncomingContext(ctx); ok {
		t.Error("gRPC read outgoing metadata as incoming")
	}
	// Appended over it with gRPC's functions, gRPC reads both; Outgoing still the carried.
	more := metadata.AppendToOutgoingContext(ctx, "x-extra", "1")
	want := metadata.Join(md, metadata.Pairs("x-extra", "1"))
	if got, _ := metadata.FromOutgoingContext(more); !reflect.DeepEqual(got, want) {
		t.Errorf("gRPC's outgoing metadata with one appended: %v, want %v", got, want)
	}
	// A carrier over a context with outgoing metadata of its own replaces it, as gRPC's does.
	over := NewOutgoingContext(metadata.NewOutgoingContext(context.Background(), metadata.Pairs("old", "1")), md)
	if got, _ := metadata.FromOutgoingContext(over); !reflect.DeepEqual(got, md) {
		t.Errorf("over older metadata, gRPC reads %v, want %v", got, md)
	}
}

// An in-process call's outgoing context is the carrier and nothing else: gRPC's outgoing key
// was learnt and is answered by the carrier.
func TestOutgoingContextIsOneAllocation(t *testing.T) { // not parallel: AllocsPerRun
	if grpcOutgoingKey == nil {
		t.Fatal("the outgoing key was not learnt: every outgoing context costs gRPC's node again")
	}
	md := metadata.MD{"authorization": {"Bearer sk-1"}}
	if n := testing.AllocsPerRun(100, func() { _ = NewOutgoingContext(context.Background(), md) }); n > 1 {
		t.Errorf("NewOutgoingContext: %v allocations, want 1", n)
	}
}

// The key is read from "authorization: Bearer x" only, the scheme in any case.
func TestBearer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ header, want string }{
		{"Bearer sk-1", "sk-1"},
		{"bearer  sk-2 ", "sk-2"},
		{"BEARER x", "x"},
		{"Bearer ", ""},
		{"Bearer", ""},
		{"Basic abc", ""},
		{"sk-3", ""},
	} {
		if got := Bearer(metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", c.header))); got != c.want {
			t.Errorf("%q: %q, want %q", c.header, got, c.want)
		}
	}
	if got := Bearer(context.Background()); got != "" {
		t.Errorf("no metadata: %q", got)
	}
}

// A server context carries the metadata as gRPC's incoming metadata and as Value reads it,
// keeps the caller's deadline and cancellation, and hides the caller's values, its incoming
// metadata included; it is one allocation.
func TestServerContext(t *testing.T) { // not parallel: AllocsPerRun
	if grpcIncomingKey == nil {
		t.Fatal("gRPC's incoming metadata key was not learnt: every in-process call costs two context nodes more")
	}
	type ctxKey struct{}
	caller, cancel := context.WithCancel(context.WithValue(
		NewIncomingContext(context.Background(), metadata.MD{"x-request-id": {"caller's"}, "other": {"o"}}), ctxKey{}, 1))
	md := metadata.MD{"x-request-id": {"req-1"}}
	for name, ctx := range map[string]context.Context{
		"server":   NewServerContext(caller, md),
		"incoming": NewIncomingContext(caller, md),
	} {
		if got := Value(ctx, "x-request-id"); got != "req-1" {
			t.Errorf("%s: Value %q", name, got)
		}
		if got := metadata.ValueFromIncomingContext(ctx, "x-request-id"); len(got) != 1 || got[0] != "req-1" {
			t.Errorf("%s: gRPC reads %q", name, got)
		}
		if got, _ := metadata.FromIncomingContext(ctx); len(got) != 1 {
			t.Errorf("%s: gRPC's incoming metadata %v, want the call's alone", name, got)
		}
		if _, ok := metadata.FromOutgoingContext(ctx); ok {
			t.Errorf("%s: incoming metadata read as outgoing", name)
		}
		// Metadata gRPC sets over it is what gRPC reads then.
		over := metadata.NewIncomingContext(ctx, metadata.MD{"x-request-id": {"later"}})
		if got := metadata.ValueFromIncomingContext(over, "x-request-id"); len(got) != 1 || got[0] != "later" {
			t.Errorf("%s: metadata set over it reads %q", name, got)
		}
	}
	srv := NewServerContext(caller, md)
	if caller.Value(ctxKey{}) != 1 || NewIncomingContext(caller, md).Value(ctxKey{}) != 1 {
		t.Fatal("the caller's value is not there to hide")
	}
	if srv.Value(ctxKey{}) != nil {
		t.Error("the server sees a value of its caller's context")
	}
	if got := testing.AllocsPerRun(100, func() { _ = NewServerContext(caller, md) }); got != 1 {
		t.Errorf("NewServerContext allocates %v times, want 1", got)
	}
	cancel()
	select {
	case <-srv.Done():
	default:
		t.Error("cancelling the caller does not reach the server context")
	}
}

// A context made under a server context (or NoValues) joins its parent's cancellation as
// under any context: no goroutine of its own per AfterFunc or WithTimeout, and the parent's
// cancellation still reaches it.
func TestDerivedContextsStartNoGoroutine(t *testing.T) {
	for name, under := range map[string]func(context.Context) context.Context{
		"server":   func(p context.Context) context.Context { return NewServerContext(p, metadata.MD{"a": {"b"}}) },
		"novalues": func(p context.Context) context.Context { return NoValues{p} },
	} {
		parent, cancel := context.WithCancel(context.Background())
		ctx := under(parent)
		before := runtime.NumGoroutine()
		ran := make(chan struct{}, 100)
		for range 100 {
			context.AfterFunc(ctx, func() { ran <- struct{}{} })
		}
		if n := runtime.NumGoroutine() - before; n > 10 {
			cancel()
			t.Fatalf("%s: %d goroutines for 100 contexts made under it", name, n)
		}
		child, stopChild := context.WithTimeout(ctx, time.Hour)
		cancel()
		for range 100 {
			select {
			case <-ran:
			case <-time.After(time.Second):
				t.Fatalf("%s: the parent's cancellation did not reach a function made under it", name)
			}
		}
		if child.Err() == nil {
			t.Fatalf("%s: the parent's cancellation did not reach a child", name)
		}
		stopChild()
	}
}

// Pairs carried as they are read as the map metadata.Pairs makes of them: by Value, by
// gRPC's readers of incoming and outgoing metadata, through ServerContext (which hides the
// caller's values) and through Outgoing; each context is one allocation and no map.
func TestPairsAreTheirMetadata(t *testing.T) { // not parallel: AllocsPerRun
	kv := []string{"authorization", "Bearer sk-1", "x-request-id", "req-1", "x-request-id-generated", "1"}
	md := metadata.Pairs(kv...)
	type ctxKey struct{}
	caller, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, 1))
	defer cancel()
	out := NewOutgoingPairs(caller, kv)
	srv, ok := ServerContext(out)
	if !ok {
		t.Fatal("no server context for outgoing pairs")
	}
	for name, ctx := range map[string]context.Context{
		"incoming": NewIncomingPairs(caller, kv),
		"server":   srv,
		"md":       NewIncomingContext(caller, md),
	} {
		for _, key := range []string{"authorization", "x-request-id", "X-Request-Id", "x-request-id-generated", "absent"} {
			want := ""
			if v := md.Get(key); len(v) > 0 {
				want = v[0]
			}
			if got := Value(ctx, key); got != want {
				t.Errorf("%s, %s: %q, want %q", name, key, got, want)
			}
			if got := metadata.ValueFromIncomingContext(ctx, strings.ToLower(key)); len(got) != len(md.Get(key)) {
				t.Errorf("%s, %s: gRPC reads %q", name, key, got)
			}
		}
		if got, _ := metadata.FromIncomingContext(ctx); !reflect.DeepEqual(got, md) {
			t.Errorf("%s: gRPC's incoming metadata %v, want %v", name, got, md)
		}
		if _, ok := metadata.FromOutgoingContext(ctx); ok {
			t.Errorf("%s: incoming metadata read as outgoing", name)
		}
	}
	if srv.Value(ctxKey{}) != nil {
		t.Error("the server sees a value of its caller's context")
	}
	if got, ok := Outgoing(out); !ok || !reflect.DeepEqual(got, md) {
		t.Errorf("Outgoing: %v %v, want %v", got, ok, md)
	}
	if got, _ := metadata.FromOutgoingContext(out); !reflect.DeepEqual(got, md) {
		t.Errorf("gRPC's outgoing metadata %v, want %v", got, md)
	}
	if Value(out, "authorization") != "" {
		t.Error("outgoing pairs read as incoming")
	}
	if _, ok := ServerContext(caller); ok {
		t.Error("a server context from a context without outgoing metadata")
	}
	for name, f := range map[string]func(){
		"NewIncomingPairs": func() { _ = NewIncomingPairs(caller, kv) },
		"NewOutgoingPairs": func() { _ = NewOutgoingPairs(caller, kv) },
		"ServerContext":    func() { _, _ = ServerContext(out) },
		"Value":            func() { _ = Value(srv, "x-request-id") },
	} {
		want := 1.0
		if name == "Value" {
			want = 0
		}
		if n := testing.AllocsPerRun(100, f); n != want {
			t.Errorf("%s: %v allocations, want %v", name, n, want)
		}
	}
	cancel()
	select {
	case <-srv.Done():
	default:
		t.Error("cancelling the caller does not reach the server context")
	}
}

// A Room's carriers are the first of their kind made with it, with what NewIncomingPairs,
// NewOutgoingPairs and ServerContext make otherwise, and no allocation; later ones are made
// apart, and the first stays as it was.
func TestRoomHoldsTheFirstCarriers(t *testing.T) { // not parallel: AllocsPerRun
	kv := []string{"authorization", "Bearer sk-1", "x-request-id", "req-1"}
	other := []string{"authorization", "Bearer sk-2", "x-request-id", "req-2"}
	var r Room
	in, out := r.IncomingPairs(context.Background(), kv), r.OutgoingPairs(context.Background(), kv)
	srv, _ := ServerContext(out)
	if in != context.Context(&r.in) || out != context.Context(&r.out) || srv != context.Context(&r.srv) {
		t.Fatal("the first carriers are not the room's")
	}
	in2, out2 := r.IncomingPairs(context.Background(), other), r.OutgoingPairs(context.Background(), other)
	srv2, _ := ServerContext(out)
	srv3, _ := ServerContext(out2)
	if in2 == in || out2 == out || srv2 == srv || srv3 == srv {
		t.Fatal("a later carrier took the room's place")
	}
	for name, c := range map[string]struct {
		ctx  context.Context
		want string
	}{"in": {in, "req-1"}, "srv": {srv, "req-1"}, "srv2": {srv2, "req-1"}, "in2": {in2, "req-2"}, "srv3": {srv3, "req-2"}} {
		if got := Value(c.ctx, "x-request-id"); got != c.want {
			t.Errorf("%s: Value %q, want %q", name, got, c.want)
		}
		if got, _ := metadata.FromIncomingContext(c.ctx); len(got) != 2 {
			t.Errorf("%s: gRPC's incoming metadata %v", name, got)
		}
	}
	if got, ok := Outgoing(out); !ok || !reflect.DeepEqual(got, metadata.Pairs(kv...)) {
		t.Errorf("Outgoing: %v", got)
	}
	rooms := make([]Room, 102)
	i := 0
	if n := testing.AllocsPerRun(100, func() {
		r := &rooms[i]
		i++
		_ = r.IncomingPairs(context.Background(), kv)
		_, _ = ServerContext(r.OutgoingPairs(context.Background(), kv))
	}); n != 0 {
		t.Errorf("a room's carriers: %v allocations, want 0", n)
	}
}
