package pgcluster

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A throwaway cluster runs without PostgreSQL's durability unless asked; a durable one (the
// bench's -pg-durable) has fsync, synchronous_commit and full_page_writes on, as the server's
// own settings report them; a persistent cluster (`make run`'s, whose ledger must survive a
// crash of the machine) is always durable.
func TestDurability(t *testing.T) {
	if _, err := binDir(); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"throwaway", Options{}, "off"},
		{"durable", Options{Durable: true}, "on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, err := Start(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Stop)
			conn, err := pgx.Connect(ctx, c.URL("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, setting := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
				var got string
				if err := conn.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("%s = %s, want %s", setting, got, tc.want)
				}
			}
		})
	}
	persistent := &Cluster{dir: t.TempDir(), port: 5999, persistent: true, durable: Options{Persistent: true}.durable()}
	if args := persistent.serverArgs(); slices.Contains(args, "fsync=off") {
		t.Errorf("a persistent cluster's server arguments %q switch fsync off", args)
	}
}
