package requestid

import (
	"sort"
	"testing"
	"time"
)

func TestNewIsGatewayFormAndSortable(t *testing.T) {
	var ids []string
	for range 3 {
		ids = append(ids, New())
		time.Sleep(2 * time.Millisecond)
	}
	for _, id := range ids {
		if len(id) < len(Prefix)+26 || !Gateway(id) || CheckClient(id) == nil {
			t.Fatalf("%q: not of the gateway's form, or accepted from a client", id)
		}
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatalf("ids made in order do not sort in order: %v", ids)
	}
}

func TestCheckClient(t *testing.T) {
	for _, c := range []struct {
		id string
		ok bool
	}{
		{"req-1", true},
		{"gwx-1", true},
		{"g", true},
		{"gw", true},
		{"gw-1", false},
		{"GW-1", false},
		{"Gw-0190a1b2c3d4e5f60718293a4b5c6d7e", false},
		{"gW-", false},
		{"", false},
		{"has space", false},
	} {
		if got := CheckClient(c.id) == nil; got != c.ok {
			t.Errorf("CheckClient(%q) accepted %v, want %v", c.id, got, c.ok)
		}
	}
}
