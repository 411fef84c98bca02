package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// rtSession is what a realtime client saw: the session's request id and the response.done
// events it received (each must be charged exactly once).
type rtSession struct {
	profile, id string
	done        int
}

// checkLedger is how every fault test ends (issue 13, "How it is checked"):
//   - no request record is left in_progress once the system's own cleanup has had cleanupBound;
//   - every profile's balance is the sum of its ledger entries and is not below zero (the soak
//     also watches it while the load runs);
//   - the charges in the ledger add up to the costs on the request records;
//   - every answer a client received in full is charged exactly once, at its price, on a record
//     with status ok; every realtime response.done a client received is charged once. A charge
//     that was refunded (a reversing entry keyed "refund <request id>", for an answer whose end
//     did not reach the client) counts as not charged, and a refund entry with no charge before
//     it (a tombstone against a late commit) changes nothing;
//   - a request refused with 503 unavailable is recorded with that status and not charged (a
//     replica killed before it wrote the record may leave none, or the system's cleanup marks
//     it abandoned).
//
// Charges settle asynchronously in some designs (the contract allows 2 s), so the checks are
// repeated until they pass or 10 s have gone by.
func (f *faultEnv) checkLedger(t *testing.T, outs []seen, sessions ...rtSession) {
	t.Helper()
	if !f.cleaned {
		// Once per test: a later check may run after the replicas that clean up have stopped.
		f.cleaned = true
		f.waitNoInProgress(t)
	}
	var problems []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		problems = f.ledgerProblems(t, outs, sessions)
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more", len(problems)-20)
			break
		}
		t.Error(p)
	}
	if len(problems) == 0 {
		t.Logf("ledger: %s", f.summary(t, outs))
	}
}

func (f *faultEnv) waitNoInProgress(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(cleanupBound)
	for {
		var n int
		var sample []string
		err := f.pool.QueryRow(context.Background(), `
			SELECT count(*), coalesce((array_agg(request_id))[1:5], '{}') FROM requests WHERE status = 'in_progress'`).Scan(&n, &sample)
		if err != nil {
			t.Errorf("count in_progress: %v", err)
			return
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d request records still in_progress %v after the system had %v to finish them", n, sample, cleanupBound)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (f *faultEnv) ledgerProblems(t *testing.T, outs []seen, sessions []rtSession) []string {
	t.Helper()
	ctx := context.Background()
	var problems []string
	// One statement, one snapshot: a settlement committing meanwhile cannot split the view.
	rows, err := f.pool.Query(ctx, `
		SELECT p.id::text, p.balance, coalesce(e.total, 0), coalesce(e.charges, 0), coalesce(r.costs, 0)
		FROM profiles p
		LEFT JOIN (SELECT profile_id, sum(amount) AS total, sum(-amount) FILTER (WHERE kind = 'charge') AS charges
		           FROM ledger_entries GROUP BY profile_id) e ON e.profile_id = p.id
		LEFT JOIN (SELECT profile_id, sum(cost) AS costs FROM requests GROUP BY profile_id) r ON r.profile_id = p.id`)
	if err != nil {
		return []string{fmt.Sprintf("read profiles: %v", err)}
	}
	for rows.Next() {
		var id string
		var balance, total, charges, costs decimal.Decimal
		if err := rows.Scan(&id, &balance, &total, &charges, &costs); err != nil {
			return []string{fmt.Sprintf("scan profiles: %v", err)}
		}
		if !balance.Equal(total) {
			problems = append(problems, fmt.Sprintf("profile %s: balance %s is not the sum of its entries %s", id, balance, total))
		}
		if balance.IsNegative() {
			problems = append(problems, fmt.Sprintf("profile %s: balance %s is below zero (more spent than credited)", id, balance))
		}
		if !charges.Equal(costs) {
			problems = append(problems, fmt.Sprintf("profile %s: charges %s differ from the request records' costs %s", id, charges, costs))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return append(problems, fmt.Sprintf("read profiles: %v", err))
	}

	type rec struct {
		status  string
		cost    decimal.NullDecimal
		charges int
	}
	byProfile := map[string][]string{}
	for _, o := range outs {
		if o.id != "" && o.profile != "" {
			byProfile[o.profile] = append(byProfile[o.profile], o.id)
		}
	}
	recs := map[string]rec{} // profile/id
	for pid, ids := range byProfile {
		rows, err := f.pool.Query(ctx, `
			SELECT r.request_id, r.status, r.cost,
			       greatest((SELECT count(*) FROM ledger_entries e WHERE e.profile_id = r.profile_id AND e.request_id = r.request_id AND e.kind = 'charge') -
			                (SELECT count(*) FROM ledger_entries e WHERE e.profile_id = r.profile_id AND e.idempotency_key = 'refund ' || r.request_id), 0)
			FROM requests r WHERE r.profile_id = $1::uuid AND r.request_id = ANY($2)`, pid, ids)
		if err != nil {
			return append(problems, fmt.Sprintf("read records: %v", err))
		}
		for rows.Next() {
			var id string
			var r rec
			if err := rows.Scan(&id, &r.status, &r.cost, &r.charges); err != nil {
				rows.Close()
				return append(problems, fmt.Sprintf("scan records: %v", err))
			}
			recs[pid+"/"+id] = r
		}
		rows.Close()
	}
	for _, o := range outs {
		r, ok := recs[o.profile+"/"+o.id]
		switch {
		case o.id == "" || o.profile == "":
			if o.full {
				problems = append(problems, fmt.Sprintf("%v: a full answer without a request id", o))
			}
		case o.full && !ok:
			problems = append(problems, fmt.Sprintf("%v: delivered in full but there is no request record", o))
		case o.full && r.charges != 1:
			problems = append(problems, fmt.Sprintf("%v: delivered in full but charged %d times", o, r.charges))
		case o.full && (r.status != "ok" || !r.cost.Valid || !r.cost.Decimal.Equal(o.want)):
			problems = append(problems, fmt.Sprintf("%v: delivered in full, record says %s cost %v, want ok %s", o, r.status, nullDec(r.cost), o.want))
		case o.full && !o.stream && o.cost != r.cost.Decimal.String():
			problems = append(problems, fmt.Sprintf("%v: x-request-cost %q, the record says %s", o, o.cost, r.cost.Decimal))
		case ok && r.charges > 1:
			problems = append(problems, fmt.Sprintf("%v: charged %d times", o, r.charges))
		case o.status == 503 && o.code == "unavailable" && ok && r.charges != 0:
			problems = append(problems, fmt.Sprintf("%v: refused as unavailable, but charged %d times", o, r.charges))
		case o.status == 503 && o.code == "unavailable" && f.wasKilled(o.replica) && ok && r.status != "unavailable" && r.status != "abandoned":
			problems = append(problems, fmt.Sprintf("%v: refused as unavailable by a replica killed later, but the record says %s", o, r.status))
		case o.status == 503 && o.code == "unavailable" && !f.wasKilled(o.replica) && (!ok || r.status != "unavailable"):
			problems = append(problems, fmt.Sprintf("%v: refused as unavailable, but the record (present %v) says %s cost %v, charged %d times; want status unavailable, uncharged",
				o, ok, r.status, nullDec(r.cost), r.charges))
		}
	}
	for _, s := range sessions {
		var n int
		// A response's record is "<session id> <n> <response id>".
		if err := f.pool.QueryRow(ctx, `
			SELECT coalesce(sum(greatest(c.n - coalesce(r.n, 0), 0)), 0)
			FROM (SELECT request_id AS id, count(*) AS n FROM ledger_entries
			      WHERE profile_id = $1::uuid AND kind = 'charge' AND starts_with(request_id, $2) GROUP BY 1) c
			LEFT JOIN (SELECT substr(idempotency_key, 8) AS id, count(*) AS n FROM ledger_entries
			      WHERE profile_id = $1::uuid AND starts_with(idempotency_key, 'refund ' || $2) GROUP BY 1) r USING (id)`,
			s.profile, s.id+" ").Scan(&n); err != nil {
			return append(problems, fmt.Sprintf("read session charges: %v", err))
		}
		if n != s.done {
			problems = append(problems, fmt.Sprintf("realtime session %s: the client received %d response.done, %d are charged", s.id, s.done, n))
		}
	}
	return problems
}

// summary is a line for the log: what the clients saw.
func (f *faultEnv) summary(t *testing.T, outs []seen) string {
	counts := map[string]int{}
	for _, o := range outs {
		k := fmt.Sprint(o.status)
		switch {
		case o.full:
			k = "full"
		case o.status == 200:
			k = "cut"
		case o.err != nil && o.status == 0:
			k = "transport error"
		case o.code != "":
			k += " " + o.code
		}
		counts[k]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d; ", k, counts[k])
	}
	return b.String()
}

func nullDec(d decimal.NullDecimal) string {
	if !d.Valid {
		return "none"
	}
	return d.Decimal.String()
}
