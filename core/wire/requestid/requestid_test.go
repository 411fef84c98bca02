package requestid

import (
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
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

// New's digits are a uuid v7 as github.com/google/uuid reads one (version, variant, the
// time in it), ids made within one millisecond still sort in order and differ, and an id
// costs one allocation (its string).
func TestNewIsAUUIDv7(t *testing.T) {
	before := time.Now()
	var ids []string
	for range 1000 {
		ids = append(ids, New())
	}
	after := time.Now()
	seen := map[string]bool{}
	for i, id := range ids {
		u, err := uuid.Parse(id[len(Prefix):])
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("%q: not a uuid v7 (%v, version %d, variant %v)", id, err, u.Version(), u.Variant())
		}
		sec, nsec := u.Time().UnixTime()
		at := time.Unix(sec, nsec)
		if at.Before(before.Truncate(time.Millisecond)) || at.After(after.Add(time.Second)) {
			t.Fatalf("%q carries the time %v, made between %v and %v", id, at, before, after)
		}
		if seen[id] || i > 0 && id <= ids[i-1] {
			t.Fatalf("%q made after %q: repeated or out of order", id, ids[i-1])
		}
		seen[id] = true
	}
	if n := testing.AllocsPerRun(100, func() { _ = New() }); n != 1 {
		t.Errorf("New allocates %v times, want 1", n)
	}
}
