package main

import "testing"

// serve samples no heap profile unless the bench profiles it or GODEBUG chose a rate.
func TestHeapProfileRate(t *testing.T) {
	for _, c := range []struct {
		name    string
		bench   bool
		godebug string
		want    int
	}{
		{name: "serving", want: 0},
		{name: "other GODEBUG settings", godebug: "gctrace=1,madvdontneed=1", want: 0},
		{name: "bench profiles", bench: true, want: 512 << 10},
		{name: "GODEBUG chose", godebug: "gctrace=1,memprofilerate=4096", want: 512 << 10},
	} {
		if got := heapProfileRate(512<<10, c.bench, c.godebug); got != c.want {
			t.Errorf("%s: rate %d, want %d", c.name, got, c.want)
		}
	}
}
