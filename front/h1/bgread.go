package h1

import "time"

// startBackgroundRead waits, in a goroutine, for the connection's next bytes while the
// handler runs: an error means the client left, and cancels the request's context (net/http
// does the same after the body). Bytes that arrive are the next request's, left in br.
// Nothing is buffered when it starts, so the wait gives br back where it can wait without
// one (bgWait): 4 KiB less per stream for its whole life, and per idle keep-alive
// connection.
func (c *conn) startBackgroundRead() {
	if c.bgRunning || c.br.Buffered() > 0 {
		return
	}
	c.bgRunning = true
	c.bgCancel = c.ctx
	if c.bgWait.usable(c.nc) {
		c.releaseReader()
	}
	go c.bgRead()
}

// backgroundRead is the goroutine of startBackgroundRead. br is its own until bgDone.
func (c *conn) backgroundRead() {
	var err error
	if c.br == nil {
		if err = c.bgWait.wait(); err == nil {
			c.reader()
		}
	}
	if err == nil {
		_, err = c.br.Peek(1)
	}
	if err != nil && !(isTimeout(err) && c.aborting()) {
		c.bgCancel.cancel(errClientGone)
	}
	c.bgDone <- err
}

// aborting reports whether the pending read's deadline was set in the past on purpose.
func (c *conn) aborting() bool { return c.abort.Load() }

// abortBackgroundRead stops a pending background read, keeping any byte it read in br.
func (c *conn) abortBackgroundRead() {
	if !c.bgRunning {
		return
	}
	c.abort.Store(true)
	_ = c.nc.SetReadDeadline(aLongTimeAgo)
	err := <-c.bgDone
	c.bgRunning = false
	c.abort.Store(false)
	_ = c.nc.SetReadDeadline(time.Time{})
	if c.br == nil { // aborted while it waited without a buffer: nothing was read
		c.reader()
		return
	}
	if err != nil && isTimeout(err) {
		// bufio keeps a read error until it is read, and the aborted Peek read nothing:
		// an empty Read takes the error so the connection can go on.
		_, _ = c.br.Read(nil)
	}
}
