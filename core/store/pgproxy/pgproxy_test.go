package pgproxy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"modelgateway/core/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func connect(t *testing.T, p *Proxy, db string) (*pgx.Conn, error) {
	t.Helper()
	u, err := p.URL(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return pgx.Connect(ctx, u)
}

func one(conn *pgx.Conn, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var n int
	return conn.QueryRow(ctx, `SELECT 1`).Scan(&n)
}

// A frozen proxy holds a query without failing it; the thaw lets the same query finish.
func TestFreezeHoldsAndThawReleases(t *testing.T) {
	t.Parallel()
	db := storetest.DatabaseURL(t)
	target, _ := TargetOf(db)
	p, err := Start(target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn, err := connect(t, p, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := one(conn, 5*time.Second); err != nil {
		t.Fatalf("before the freeze: %v", err)
	}
	p.Freeze()
	done := make(chan error, 1)
	go func() {
		var n int
		done <- conn.QueryRow(context.Background(), `SELECT 1`).Scan(&n)
	}()
	select {
	case err := <-done:
		t.Fatalf("a query went through a frozen proxy: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	p.Thaw()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after the thaw: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held query did not finish after the thaw")
	}
}

// Cut drops open connections (even frozen ones); Down refuses new ones until Up.
func TestCutAndDown(t *testing.T) {
	t.Parallel()
	db := storetest.DatabaseURL(t)
	target, _ := TargetOf(db)
	p, err := Start(target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn, err := connect(t, p, db)
	if err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	done := make(chan error, 1)
	go func() { done <- one(conn, 30*time.Second) }()
	time.Sleep(50 * time.Millisecond)
	p.Cut()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a query survived the cut")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cut did not end a frozen query")
	}
	p.Down()
	if c, err := connect(t, p, db); err == nil {
		c.Close(context.Background())
		t.Fatal("connected while the database is down")
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a refused connection should fail at once, not time out: %v", err)
	}
	p.Up()
	c, err := connect(t, p, db)
	if err != nil {
		t.Fatalf("after up: %v", err)
	}
	defer c.Close(context.Background())
	if err := one(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}
