package front

import (
	"sync/atomic"
	"time"
)

// LiveTraffic is what the replica's batch runner reads to let live requests go first
// (contract.md "Files and batches"; core/batchrun.Priority): how many clients' generation
// requests are in flight on this replica, and when the last one arrived. Batch items, which
// run through the same routes (ServeInternal), are not counted.
type LiveTraffic struct {
	inflight atomic.Int64
	last     atomic.Int64 // unix nanoseconds of the last arrival; 0: none yet
}

// begin counts a live request from its arrival; end ends it. (Two methods, not a returned
// func: the func's closure was an allocation per request.)
func (l *LiveTraffic) begin() {
	l.last.Store(time.Now().UnixNano())
	l.inflight.Add(1)
}

// end counts a live request begun with begin as ended.
func (l *LiveTraffic) end() { l.inflight.Add(-1) }

// InFlight is the number of live generation requests being served now.
func (l *LiveTraffic) InFlight() int64 { return l.inflight.Load() }

// LastArrival is when the last live generation request arrived (the zero time: none yet).
func (l *LiveTraffic) LastArrival() time.Time {
	if n := l.last.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Live is the replica's live traffic.
func (s *Server) Live() *LiveTraffic { return &s.live }
