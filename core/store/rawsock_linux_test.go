package store_test

import (
	"context"
	"net"
	"testing"

	"modelgateway/core/wire/rawsock"
)

// TestPoolReadsRawSockets: the pool's connections are read and written with raw system
// calls (rawSockets), and queries run on them.
func TestPoolReadsRawSockets(t *testing.T) {
	t.Parallel()
	st, _ := open(t)
	ctx := context.Background()
	c, err := st.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if nc := c.Conn().PgConn().Conn(); !isRaw(nc) {
		t.Fatalf("pool connection is %T, not raw", nc)
	}
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, 100000)`).Scan(&n); err != nil || n != 100000 {
		t.Fatalf("query on a raw connection: %d, %v", n, err)
	}
}

func isRaw(c net.Conn) bool {
	_, ok := c.(*rawsock.Conn)
	return ok
}
