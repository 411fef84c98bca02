package store_test

import (
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/google/uuid"

	"modelgateway/core/store"
	"modelgateway/migrations"
)

// requestIDFixture is two profiles with a key each.
type requestIDFixture struct {
	st   *store.Store
	pids [2]uuid.UUID
	keys [2]uuid.UUID
}

func newRequestIDFixture(t *testing.T) *requestIDFixture {
	t.Helper()
	st, _ := open(t)
	ctx := context.Background()
	f := &requestIDFixture{st: st}
	for i := range 2 {
		p, err := st.CreateProfile(ctx, "p", "")
		if err != nil {
			t.Fatal(err)
		}
		k, err := st.CreateKey(ctx, &store.Key{ProfileID: p.ID, Name: "k", Prefix: "sk-gw-" + p.ID.String()[:8], SecretHash: []byte(p.ID.String()),
			AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		f.pids[i], f.keys[i] = p.ID, k.ID
	}
	return f
}

func (f *requestIDFixture) reserve(t *testing.T, who int, id string) bool {
	t.Helper()
	r := store.RequestRecord{ProfileID: f.pids[who], RequestID: id, KeyID: f.keys[who], Model: "m", EndpointFamily: "chat.completions",
		Currency: "RUB", StartTime: time.Now()}
	ok, err := f.st.ReserveRequestID(context.Background(), &r, uuid.New())
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func (f *requestIDFixture) records(t *testing.T, id string) int {
	t.Helper()
	var n int
	if err := f.st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM requests WHERE request_id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A client id is taken once for every profile: the second profile's reservation loses and
// writes no record.
func TestRequestIDIsTakenAcrossProfiles(t *testing.T) {
	t.Parallel()
	f := newRequestIDFixture(t)
	if !f.reserve(t, 0, "shared-1") {
		t.Fatal("the first reservation of a fresh id lost")
	}
	if f.reserve(t, 0, "shared-1") {
		t.Fatal("the same profile reserved one id twice")
	}
	if f.reserve(t, 1, "shared-1") {
		t.Fatal("another profile reserved an id already taken")
	}
	if n := f.records(t, "shared-1"); n != 1 {
		t.Fatalf("%d records of the id, want the first profile's alone", n)
	}
	if !f.reserve(t, 1, "shared-2") {
		t.Fatal("the second profile could not take a fresh id")
	}
}

// Migration 0011 on a database where two profiles already used one id (allowed before it):
// it applies, and the id stays taken for everyone. A client id recorded without its
// reservation (settlement of a request whose reservation met an unreachable database) is
// taken too; gateway and derived ids are not copied.
func TestRequestIDMigrationTakesExistingIDs(t *testing.T) {
	t.Parallel()
	f := newRequestIDFixture(t)
	ctx := context.Background()
	run := func(name string) {
		t.Helper()
		sql, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.Pool.Exec(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	run("0011_request_ids.down.sql")
	insert := func(who int, id, status string) {
		t.Helper()
		if _, err := f.st.Pool.Exec(ctx, `INSERT INTO requests (profile_id, request_id, key_id, model_id, endpoint_family, status, currency)
			VALUES ($1, $2, $3, 'm', 'chat.completions', $4, 'RUB')`, f.pids[who], id, f.keys[who], status); err != nil {
			t.Fatal(err)
		}
	}
	insert(0, "old-dup", "ok")
	insert(1, "old-dup", "ok")
	insert(0, "old-rt 1 resp_1", "ok")
	run("0011_request_ids.up.sql")

	if f.reserve(t, 0, "old-dup") || f.reserve(t, 1, "old-dup") {
		t.Fatal("an id used before the migration was reserved again")
	}
	var derived int
	if err := f.st.Pool.QueryRow(ctx, `SELECT count(*) FROM request_ids WHERE request_id = 'old-rt 1 resp_1'`).Scan(&derived); err != nil || derived != 0 {
		t.Fatalf("derived id copied: %d %v", derived, err)
	}

	// After the migration: a record settled without reservation takes its client id; a
	// gateway id and a derived id are left out.
	insert(0, "late-client", "unavailable")
	insert(0, "GW-0123456789abcdef0123456789abcdef", "ok")
	insert(0, "late-client 2 resp_2", "ok")
	if f.reserve(t, 1, "late-client") {
		t.Fatal("a client id recorded by settlement was reserved again by another profile")
	}
	var n int
	if err := f.st.Pool.QueryRow(ctx, `SELECT count(*) FROM request_ids WHERE request_id LIKE 'GW-%' OR request_id LIKE '% %'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d gateway or derived ids in request_ids, %v", n, err)
	}
}
