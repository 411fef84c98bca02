package billing

import (
	"time"

	"github.com/shopspring/decimal"
)

// InFlight is a moment's view of a replica's money in flight, for metrics.
type InFlight struct {
	Holds   decimal.Decimal // held for requests in flight
	Leases  decimal.Decimal // reserved in the database for this replica
	Pending int             // finished requests waiting for settlement
}

// InFlight sums the accounts; it takes the ledger's lock once, so call it per scrape, not per
// request.
func (l *Ledger) InFlight() InFlight {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := InFlight{Pending: len(l.pending)}
	for _, a := range l.accounts {
		s.Holds = s.Holds.Add(a.held.dec())
		s.Leases = s.Leases.Add(a.lease.dec())
	}
	return s
}

// settled reports one settlement transaction, which took took, to OnSettle.
func (l *Ledger) settled(batch int, took time.Duration, err error) {
	if l.OnSettle != nil {
		l.OnSettle(batch, took, err)
	}
}
