package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"modelgateway/core/store"
)

// putChain stores n responses, each continuing the one before, and returns their ids.
func putChain(t *testing.T, st *store.Store, profile uuid.UUID, prefix string, n int, expires time.Time) []string {
	t.Helper()
	var ids []string
	prev := ""
	for i := range n {
		id := fmt.Sprintf("resp_%s%d", prefix, i)
		err := st.PutStoredResponse(context.Background(), &store.StoredResponse{
			ID: id, ProfileID: profile, PreviousID: prev, ExpiresAt: expires,
			Response:   []byte(fmt.Sprintf(`{"id":%q,"object":"response","output":[{"type":"message","id":"o%d"}]}`, id, i)),
			InputItems: []byte(fmt.Sprintf(`[{"type":"message","id":"i%d"}]`, i)),
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		prev = id
	}
	return ids
}

// order is the chain's item ids, oldest first.
func order(links []store.ChainLink) string {
	var out []string
	for _, l := range links {
		for _, part := range []string{string(l.InputItems), string(l.Output)} {
			for _, f := range strings.Split(part, `"id": "`)[1:] {
				out = append(out, f[:strings.IndexByte(f, '"')])
			}
		}
	}
	return strings.Join(out, ",")
}

// A chain is read whole, oldest first; what cannot be continued is refused with the error
// that says why, and the purge removes deleted and expired rows but keeps an expired row
// that a live one continues.
func TestStoredResponseChainAndPurge(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	p1, err := st.CreateProfile(ctx, "one", "")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := st.CreateProfile(ctx, "two", "")
	if err != nil {
		t.Fatal(err)
	}
	live := time.Now().Add(time.Hour)
	ids := putChain(t, st, p1.ID, "a", 3, live)

	links, err := st.StoredResponseChain(ctx, p1.ID, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if got := order(links); got != "i0,o0,i1,o1,i2,o2" {
		t.Fatalf("chain order %s", got)
	}
	if _, err := st.StoredResponseChain(ctx, p2.ID, ids[2]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another profile: %v", err)
	}
	if _, err := st.StoredResponseChain(ctx, p1.ID, "resp_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}

	// The oldest response expires: the chain still reads (its newest is live), the
	// expired one alone does not, and the purge keeps it while it is continued.
	if _, err := st.Pool.Exec(ctx, `UPDATE stored_responses SET expires_at = now() - interval '1 second' WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := st.StoredResponseChain(ctx, p1.ID, ids[2]); err != nil {
		t.Errorf("a chain whose oldest response expired: %v", err)
	}
	if _, err := st.StoredResponseChain(ctx, p1.ID, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an expired head: %v", err)
	}
	if _, _, err := st.GetStoredResponse(ctx, p1.ID, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GET of an expired response: %v", err)
	}
	if n, err := st.PurgeStoredResponses(ctx, 10); err != nil || n != 0 {
		t.Fatalf("purge removed %d (%v), want 0: the expired row is continued", n, err)
	}

	// Deleting the middle breaks the chain; the purge takes the deleted row, and then
	// the expired one that nothing continues any more.
	if err := st.DeleteStoredResponse(ctx, p1.ID, ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteStoredResponse(ctx, p2.ID, ids[2]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another profile deleted: %v", err)
	}
	if _, err := st.StoredResponseChain(ctx, p1.ID, ids[2]); !errors.Is(err, store.ErrChainBroken) {
		t.Errorf("a chain through a deleted response: %v", err)
	}
	if n, err := st.PurgeStoredResponses(ctx, 10); err != nil || n != 1 {
		t.Fatalf("first purge removed %d (%v), want the deleted row", n, err)
	}
	if _, err := st.StoredResponseChain(ctx, p1.ID, ids[2]); !errors.Is(err, store.ErrChainBroken) {
		t.Errorf("a chain whose middle was purged: %v", err)
	}
	if n, err := st.PurgeStoredResponses(ctx, 10); err != nil || n != 1 {
		t.Fatalf("second purge removed %d (%v), want the expired row", n, err)
	}
	if _, _, err := st.GetStoredResponse(ctx, p1.ID, ids[2]); err != nil {
		t.Errorf("the live response went: %v", err)
	}

	// Batches: 25 expired rows go in batches of 10.
	putChain(t, st, p2.ID, "b", 1, live)
	for i := range 25 {
		putChain(t, st, p2.ID, fmt.Sprintf("x%d_", i), 1, time.Now().Add(-time.Second))
	}
	var removed []int64
	for {
		n, err := st.PurgeStoredResponses(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		removed = append(removed, n)
	}
	if fmt.Sprint(removed) != "[10 10 5]" {
		t.Errorf("batches %v, want [10 10 5]", removed)
	}
	var left int
	if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM stored_responses`).Scan(&left); err != nil || left != 2 {
		t.Errorf("%d rows left (%v), want the two live ones", left, err)
	}
}

// A conversation whose items add up past MaxChainBytes is refused as too large, and the
// read stops at the cap: one turn under it still continues.
func TestStoredResponseChainTooLarge(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	p, err := st.CreateProfile(ctx, "big", "")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", store.MaxChainBytes/2+1024)
	prev := ""
	for i := range 2 {
		id := fmt.Sprintf("resp_big%d", i)
		err := st.PutStoredResponse(ctx, &store.StoredResponse{
			ID: id, ProfileID: p.ID, PreviousID: prev, ExpiresAt: time.Now().Add(time.Hour),
			Response:   []byte(fmt.Sprintf(`{"id":%q,"output":[]}`, id)),
			InputItems: []byte(fmt.Sprintf(`[{"type":"message","id":"i%d","text":%q}]`, i, big)),
		})
		if err != nil {
			t.Fatal(err)
		}
		prev = id
	}
	if links, err := st.StoredResponseChain(ctx, p.ID, "resp_big0"); err != nil || len(links) != 1 {
		t.Fatalf("one turn under the cap: %d links, %v", len(links), err)
	}
	if _, err := st.StoredResponseChain(ctx, p.ID, "resp_big1"); !errors.Is(err, store.ErrChainTooLarge) {
		t.Fatalf("two turns past the cap: %v, want ErrChainTooLarge", err)
	}
}
