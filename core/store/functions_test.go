package store_test

import (
	"context"
	"database/sql"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/migrations"
)

// functionFiles reads migrations/functions: name -> the file's text.
func functionFiles(t *testing.T) map[string]string {
	t.Helper()
	files, err := fs.Glob(migrations.Functions, "functions/*.sql")
	if err != nil || len(files) < 2 {
		t.Fatalf("function files %v: %v", files, err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := fs.ReadFile(migrations.Functions, f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(path.Base(f), ".sql")] = string(b)
	}
	return out
}

func sqlDB(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var body = regexp.MustCompile(`(?s)\$\$(.*)\$\$;\s*$`)

// mismatch says how the database's function name differs from its file ("" when it does
// not): its body (prosrc) must be the file's text between the dollar quotes, byte for byte,
// and its whole definition (arguments, result, settings) what the file's statement makes,
// read by running the file in a transaction that is rolled back.
func mismatch(t *testing.T, db *sql.DB, name, file string) string {
	t.Helper()
	ctx := context.Background()
	m := body.FindStringSubmatch(file)
	if m == nil {
		t.Fatalf("%s: no $$ body in the file", name)
	}
	var src string
	if err := db.QueryRowContext(ctx, `SELECT coalesce(string_agg(prosrc, ''), '') FROM pg_proc WHERE proname = $1`, name).Scan(&src); err != nil {
		t.Fatal(err)
	}
	if src != m[1] {
		return "body differs"
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	have, err := store.FunctionDefinition(ctx, tx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, file); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want, err := store.FunctionDefinition(ctx, tx, name)
	if err != nil {
		t.Fatal(err)
	}
	if have != want {
		return "definition differs:\n" + have + "\nthe file's:\n" + want
	}
	return ""
}

// A migrated database's functions are their files' texts.
func TestFunctionsAreTheirFiles(t *testing.T) {
	t.Parallel()
	_, url := open(t)
	db := sqlDB(t, url)
	for name, file := range functionFiles(t) {
		if d := mismatch(t, db, name, file); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
}

// A function whose definition drifted from its file (here: a setting reset and a body
// edited, as a hand fix on a deployment would) is brought back by the next Migrate, and a
// Migrate that finds every function as its file leaves the catalogue rows untouched
// (rolled back, so the other replicas' cached plans stay valid).
func TestMigrateReappliesChangedFunctions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, url := open(t)
	db := sqlDB(t, url)
	files := functionFiles(t)
	rowVersions := func() string {
		var v string
		if err := db.QueryRowContext(ctx, `SELECT string_agg(proname || ' ' || xmin::text, ',' ORDER BY proname) FROM pg_proc WHERE proname LIKE 'gateway\_%'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	for _, q := range []string{
		`ALTER FUNCTION gateway_settle RESET enable_seqscan`,
		strings.Replace(files["gateway_extend_lease"], "BEGIN\n", "BEGIN\n    -- edited by hand\n", 1),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"gateway_settle", "gateway_extend_lease"} {
		if mismatch(t, db, name, files[name]) == "" {
			t.Fatalf("%s: the drift is not seen", name)
		}
	}
	drifted := rowVersions()
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	for name, file := range files {
		if d := mismatch(t, db, name, file); d != "" {
			t.Fatalf("%s after Migrate: %s", name, d)
		}
	}
	repaired := rowVersions()
	if repaired == drifted {
		t.Fatalf("Migrate rewrote nothing: %s", repaired)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	if again := rowVersions(); again != repaired {
		t.Fatalf("a Migrate with nothing to change rewrote functions: %s, then %s", repaired, again)
	}
}

// The down migrations that restored older texts of gateway_settle (0010 and 0009) now keep the
// current one, which runs on their schemas: undone down to 0008 (foreign keys back), a batch
// still settles, and the migrations that need neither function drop them on the way down.
func TestFunctionsServeTheSchemasTheDownMigrationsLeave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := open(t)
	db := sqlDB(t, url)
	runMigrationFiles(t, db, "0011_request_ids.down.sql", "0010_settle_classify.down.sql", "0009_settle_set.down.sql")
	var fks int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_constraint WHERE conname = 'requests_profile_id_fkey'`).Scan(&fks); err != nil || fks != 1 {
		t.Fatalf("migration 0009 not undone: %d foreign keys, %v", fks, err)
	}
	p, err := st.CreateProfile(ctx, "p", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreditProfile(ctx, p.ID, decimal.RequireFromString("5"), "top up", "k1"); err != nil {
		t.Fatal(err)
	}
	key := uuid.New()
	if _, err := db.ExecContext(ctx, `INSERT INTO api_keys (id, profile_id, prefix, secret_hash) VALUES ($1, $2, 'x', $3)`, key, p.ID, key[:]); err != nil {
		t.Fatal(err)
	}
	got, err := st.Settle(ctx, uuid.New(), []store.Settlement{{Record: store.RequestRecord{
		ProfileID: p.ID, RequestID: "r1", KeyID: key, Model: "m", EndpointFamily: "chat", Status: "ok", Currency: "RUB",
		Cost: decimal.NewNullDecimal(decimal.RequireFromString("1.25")),
	}}})
	if err != nil {
		t.Fatalf("settle on the 0008 schema: %v", err)
	}
	if len(got.Charged) != 1 || !got.Charged[0].Decimal.Equal(decimal.RequireFromString("1.25")) {
		t.Fatalf("charged %v", got.Charged)
	}
	var balance, entries decimal.Decimal
	if err := db.QueryRowContext(ctx, `SELECT balance, (SELECT sum(amount) FROM ledger_entries WHERE profile_id = $1) FROM profiles WHERE id = $1`, p.ID).Scan(&balance, &entries); err != nil {
		t.Fatal(err)
	}
	if !balance.Equal(decimal.RequireFromString("3.75")) || !entries.Equal(balance) {
		t.Fatalf("balance %s, ledger sum %s, want 3.75 both", balance, entries)
	}
	// 0012 (key budgets) is undone last: the current gateway_settle needs its tables, and it
	// drops that function and its own.
	runMigrationFiles(t, db, "0012_key_budgets.down.sql", "0008_ledger_throughput.down.sql", "0004_durable_billing.down.sql")
	var left int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_proc WHERE proname LIKE 'gateway\_%'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d gateway functions left below 0004: %v", left, err)
	}
}

func runMigrationFiles(t *testing.T, db *sql.DB, names ...string) {
	t.Helper()
	for _, name := range names {
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(context.Background(), string(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
