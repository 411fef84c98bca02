package statusdata_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	statusv1 "modelgateway/gen/gateway/status/v1"

	"modelgateway/core/catalog"
	"modelgateway/core/provider"
	"modelgateway/core/provider/anthropic"
	"modelgateway/core/provider/openai"
	"modelgateway/core/simulator"
	"modelgateway/core/snapshot"
	"modelgateway/core/statusdata"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
	"modelgateway/core/verify"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func TestClassifyLeavesClientErrorsOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status     string
		counts, ok bool
	}{
		{"ok", true, true},
		{"upstream_error", true, false},
		{"upstream_timeout", true, false},
		{"pricing_unavailable", true, false},
		{"internal_error", true, false},
		{"invalid_key", false, false},
		{"insufficient_balance", false, false},
		{"model_not_allowed", false, false},
		{"endpoint_not_allowed", false, false},
		{"invalid_request_error", false, false},
		{"duplicate_request_id", false, false},
		{"cancelled", false, false},
	} {
		counts, ok := statusdata.Classify(tc.status)
		if counts != tc.counts || ok != tc.ok {
			t.Errorf("Classify(%q) = %v, %v; want %v, %v", tc.status, counts, ok, tc.counts, tc.ok)
		}
	}
}

func TestStateByRatioAndNoDataWithoutTraffic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ok, failed int64
		want       string
	}{
		{0, 0, statusdata.NoData},
		{99, 1, statusdata.Operational},
		{98, 2, statusdata.DegradedPerformance},
		{95, 5, statusdata.DegradedPerformance},
		{3, 1, statusdata.PartialOutage},
		{1, 1, statusdata.MajorOutage},
		{0, 3, statusdata.MajorOutage},
	} {
		if got := statusdata.State(tc.ok, tc.failed); got != tc.want {
			t.Errorf("State(%d, %d) = %s, want %s", tc.ok, tc.failed, got, tc.want)
		}
	}
}

func TestQuantileIsTheBucketBound(t *testing.T) {
	t.Parallel()
	hist := make([]int64, len(statusdata.LatencyBounds)+1)
	hist[2] = 90 // ≤ 50 ms
	hist[9] = 10 // ≤ 1000 ms
	if got := statusdata.Quantile(hist, 0.5); got != 50 {
		t.Errorf("p50 = %v, want 50", got)
	}
	if got := statusdata.Quantile(hist, 0.95); got != 1000 {
		t.Errorf("p95 = %v, want 1000", got)
	}
	if got := statusdata.Quantile(make([]int64, len(hist)), 0.5); !math.IsNaN(got) {
		t.Errorf("empty p50 = %v, want NaN", got)
	}
}

func openStore(t *testing.T, dbURL string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func component(t *testing.T, st *statusv1.GetStatusResponse, id string) *statusv1.Component {
	t.Helper()
	for _, c := range st.GetComponents() {
		if c.GetId() == id {
			return c
		}
	}
	t.Fatalf("no component %s", id)
	return nil
}

// Two replicas count into the same minute rows; either reads the sum back, latency included.
func TestTwoRecordersAddUpAndEveryReaderSeesTheSum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storetest.DatabaseURL(t)
	a, b := openStore(t, dbURL), openStore(t, dbURL)
	ra, rb := &statusdata.Recorder{Store: a}, &statusdata.Recorder{Store: b}
	now := time.Now()
	ev := func(family, status string, ttfb time.Duration) statusdata.Event {
		start := now.Add(-2 * time.Second)
		return statusdata.Event{EndpointFamily: family, Model: "m", Status: status, Start: start, FirstByte: start.Add(ttfb), End: now}
	}
	for range 18 {
		ra.Record(ev("chat.completions", "ok", 40*time.Millisecond))
	}
	rb.Record(ev("completions", "ok", 900*time.Millisecond))
	rb.Record(ev("chat.completions", "upstream_error", 900*time.Millisecond))
	// Client-caused: not counted at all.
	rb.Record(ev("chat.completions", "insufficient_balance", time.Millisecond))
	rb.Record(ev("messages", "invalid_request_error", time.Millisecond))
	if err := ra.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rb.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var seen []*statusv1.GetStatusResponse
	for _, st := range []*store.Store{a, b} {
		r := &statusdata.Reader{Store: st, Snapshots: func() *snapshot.Snapshot { return nil }}
		got, err := r.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, got)
		c := component(t, got, "chat-completions")
		if c.GetRequests() != 20 || c.GetFailures() != 1 {
			t.Fatalf("chat-completions: %d requests, %d failures; want 20, 1", c.GetRequests(), c.GetFailures())
		}
		if c.GetState() != statusdata.DegradedPerformance || c.GetSuccessRatio().GetValue() != 0.95 {
			t.Errorf("chat-completions: %s at %v, want degraded_performance at 0.95", c.GetState(), c.GetSuccessRatio().GetValue())
		}
		if c.GetP50Ms().GetValue() != 50 || c.GetP95Ms().GetValue() != 1000 {
			t.Errorf("latency p50 %v p95 %v, want 50 and 1000 (time to first byte)", c.GetP50Ms().GetValue(), c.GetP95Ms().GetValue())
		}
		m := component(t, got, "messages")
		if m.GetState() != statusdata.NoData || m.SuccessRatio != nil || m.P50Ms != nil {
			t.Errorf("messages with only a client error: %v, want no data without numbers", m)
		}
		if h := c.GetHistory(); len(h) != statusdata.HistoryDays || h[len(h)-1].GetRequests() != 20 || h[len(h)-1].GetState() != statusdata.DegradedPerformance || h[0].GetState() != statusdata.NoData {
			t.Errorf("history: %d days, today %v, first %v", len(h), h[len(h)-1], h[0])
		}
	}
	if fmt.Sprint(seen[0].GetComponents()) != fmt.Sprint(seen[1].GetComponents()) {
		t.Errorf("replicas disagree:\n%v\n%v", seen[0].GetComponents(), seen[1].GetComponents())
	}
}

func TestOldMinutesLeaveTheWindowButStayInTheDailyRollUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t, storetest.DatabaseURL(t))
	r := &statusdata.Recorder{Store: st}
	now := time.Now().UTC()
	old := now.Add(-40 * time.Minute)
	if old.Truncate(24*time.Hour) != now.Truncate(24*time.Hour) {
		old = now.Add(-24 * time.Hour) // just after midnight: yesterday, still outside the window
	}
	r.Record(statusdata.Event{EndpointFamily: "embeddings", Model: "e", Status: "ok", Start: old, End: old})
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := (&statusdata.Reader{Store: st, Snapshots: func() *snapshot.Snapshot { return nil }}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := component(t, got, "embeddings")
	if c.GetState() != statusdata.NoData || c.GetRequests() != 0 {
		t.Errorf("a request 40 minutes ago: %s with %d requests, want no data", c.GetState(), c.GetRequests())
	}
	var day *statusv1.Day
	for _, d := range c.GetHistory() {
		if d.GetDate() == old.Format(time.DateOnly) {
			day = d
		}
	}
	if day == nil || day.GetRequests() != 1 || day.GetState() != statusdata.Operational {
		t.Errorf("daily roll-up of %s: %v, want 1 request, operational", old.Format(time.DateOnly), day)
	}
}

// The chat bot component behind its seam: no data until something reports, operational while
// reports arrive, a major outage after two silent minutes.
func TestChatBotStateFromItsLastReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t, storetest.DatabaseURL(t))
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		beat  statusdata.BotHeartbeat
		state string
	}{
		{"nothing wired", nil, statusdata.NoData},
		{"never reported", func(context.Context) (time.Time, error) { return time.Time{}, nil }, statusdata.NoData},
		{"reported a minute ago", func(context.Context) (time.Time, error) { return now.Add(-time.Minute), nil }, statusdata.Operational},
		{"silent for three minutes", func(context.Context) (time.Time, error) { return now.Add(-3 * time.Minute), nil }, statusdata.MajorOutage},
	} {
		r := &statusdata.Reader{Store: st, Snapshots: func() *snapshot.Snapshot { return nil }, BotHeartbeat: tc.beat, Now: func() time.Time { return now }}
		got, err := r.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s := component(t, got, statusdata.ChatBot).GetState(); s != tc.state {
			t.Errorf("%s: %s, want %s", tc.name, s, tc.state)
		}
	}
}

const probeCatalog = `{
  "currency": "RUB",
  "families": [{"id": "fam"}],
  "providers": [
    {"id": "up", "kind": "openai", "base_url": "%[1]s/v1", "api_key_env": "K"},
    {"id": "down", "kind": "anthropic", "base_url": "%[2]s", "api_key_env": "K"}
  ],
  "models": [
    {"id": "m-up", "family": "fam", "routes": [{"endpoint_families": ["chat.completions", "responses"], "provider": "up"}],
     "prices": [{"endpoint_families": ["chat.completions", "responses"], "billing_mode": "per_token", "input": "1", "output": "2"}],
     "capabilities": [{"endpoint_family": "chat.completions", "optional_parameters": [], "verified_at": "2026-11-01T00:00:00Z"}]},
    {"id": "m-down", "family": "fam", "routes": [{"endpoint_families": ["messages"], "provider": "down"}],
     "prices": [{"endpoint_families": ["messages"], "billing_mode": "per_token", "input": "1", "output": "2"}]}
  ]
}`

// The probe runs on one replica at a time (the lease), sends the smallest request to every
// public pair against the simulator, and fills the matrix; it charges nobody.
func TestProbeFillsTheMatrixOnOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	up := httptest.NewServer(simulator.New(simulator.Options{Words: 2}))
	t.Cleanup(up.Close)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	t.Cleanup(down.Close)
	dbURL := storetest.DatabaseURL(t)
	st := openStore(t, dbURL)
	doc, err := catalog.Parse(fmt.Appendf(nil, probeCatalog, up.URL, down.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyCatalog(ctx, doc); err != nil {
		t.Fatal(err)
	}
	holder, err := snapshot.NewHolder(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	prober := &verify.Prober{Adapters: map[string]provider.Adapter{"openai": openai.Adapter{}, "anthropic": anthropic.Adapter{}}, Env: func(string) string { return "" }}
	probe := func(holderName string, s *store.Store) *statusdata.Probe {
		return &statusdata.Probe{Store: s, Snapshots: holder.Current, Prober: prober, Recorder: &statusdata.Recorder{Store: s}, Interval: time.Minute, Holder: holderName}
	}
	p1, p2 := probe("replica-1", st), probe("replica-2", openStore(t, dbURL))
	before := time.Now()
	n, err := p1.Once(ctx)
	if err != nil || n != 3 {
		t.Fatalf("first replica probed %d pairs (%v), want 3", n, err)
	}
	if n, err := p2.Once(ctx); err != nil || n != 0 {
		t.Fatalf("second replica probed %d pairs (%v) while the first holds the lease, want 0", n, err)
	}
	if n, err := p1.Once(ctx); err != nil || n != 3 {
		t.Fatalf("the holder renews its lease: probed %d (%v), want 3", n, err)
	}
	got, err := (&statusdata.Reader{Store: st, Snapshots: holder.Current}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]*statusv1.EndpointStatus{}
	for _, m := range got.GetModels() {
		for _, e := range m.GetEndpointFamilies() {
			cells[m.GetId()+" "+e.GetEndpointFamily()] = e
		}
	}
	if len(cells) != 3 {
		t.Fatalf("matrix cells %v, want 3", cells)
	}
	chat := cells["m-up chat.completions"]
	if chat.GetState() != statusdata.Operational || chat.GetRequests() != 2 || chat.GetLastSuccessTime().AsTime().Before(before.Truncate(time.Second)) {
		t.Errorf("m-up chat.completions: %v, want operational with 2 probes and a last success", chat)
	}
	if !chat.GetVerified() || len(chat.GetOptionalParameters()) != 0 {
		t.Errorf("m-up chat.completions: verified %v params %v, want verified with none", chat.GetVerified(), chat.GetOptionalParameters())
	}
	if r := cells["m-up responses"]; r.GetVerified() || r.GetState() != statusdata.Operational {
		t.Errorf("m-up responses: %v, want unverified (unknown, passed through) and operational", r)
	}
	if d := cells["m-down messages"]; d.GetState() != statusdata.MajorOutage || d.GetLastSuccessTime() != nil {
		t.Errorf("m-down messages: %v, want a major outage and no success", d)
	}
	// Probes are not live traffic and charge nobody.
	if c := component(t, got, "chat-completions"); c.GetRequests() != 0 {
		t.Errorf("probes counted as live traffic: %d requests", c.GetRequests())
	}
	var records, entries int
	if err := st.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM requests), (SELECT count(*) FROM ledger_entries)`).Scan(&records, &entries); err != nil {
		t.Fatal(err)
	}
	if records != 0 || entries != 0 {
		t.Errorf("probes left %d request records and %d ledger entries, want none", records, entries)
	}
}

// A component is degraded or out only after MinRequests requests in its window or
// MinFailuresInARow failures in a row: 2 upstream failures in 9 requests stay operational.
func TestComponentStateNeedsTwentyRequestsOrFiveFailuresInARow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		ok, failed, inRow int64
		want              string
	}{
		{"nothing counted", 0, 0, 0, statusdata.NoData},
		{"2 of 9 failed", 7, 2, 1, statusdata.Operational},
		{"4 of 4 failed: one short of a run", 0, 4, 4, statusdata.Operational},
		{"19 requests, 10 failed, not in a row", 9, 10, 0, statusdata.Operational},
		{"5 failures in a row", 0, 5, 5, statusdata.MajorOutage},
		{"5 in a row after 14 successes", 14, 5, 5, statusdata.MajorOutage},
		{"5 in a row after 40 successes", 40, 5, 5, statusdata.PartialOutage},
		{"20 requests, 1 failed", 19, 1, 0, statusdata.DegradedPerformance},
		{"20 requests, 5 failed", 15, 5, 0, statusdata.PartialOutage},
		{"20 requests, none failed", 20, 0, 0, statusdata.Operational},
		{"100 requests, 1 failed", 99, 1, 1, statusdata.Operational},
	} {
		if got := statusdata.ComponentState(tc.ok, tc.failed, tc.inRow); got != tc.want {
			t.Errorf("%s: ComponentState(%d, %d, %d) = %s, want %s", tc.name, tc.ok, tc.failed, tc.inRow, got, tc.want)
		}
	}
}

// The run of failures is read from the newest minutes back to the first minute with a
// success; the minutes may come in any order.
func TestFailuresInARowStopsAtTheNewestSuccess(t *testing.T) {
	t.Parallel()
	at := func(min int, ok, failed int64) store.StatusMinute {
		return store.StatusMinute{Minute: time.Date(2026, 11, 24, 12, min, 0, 0, time.UTC), OK: ok, Failed: failed}
	}
	for _, tc := range []struct {
		name    string
		minutes []store.StatusMinute
		want    int64
	}{
		{"none", nil, 0},
		{"newest minute has a success", []store.StatusMinute{at(1, 0, 9), at(2, 1, 3)}, 0},
		{"two failing minutes after a success", []store.StatusMinute{at(3, 0, 2), at(1, 5, 1), at(2, 0, 3)}, 5},
		{"only failures", []store.StatusMinute{at(1, 0, 2), at(2, 0, 4)}, 6},
	} {
		if got := statusdata.FailuresInARow(tc.minutes); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Read back from PostgreSQL: the case (2 upstream failures in 9 requests) stays
// operational, on the page and in today's bar; a quiet family that fails five times after
// its last success is a major outage.
func TestReaderNeedsEnoughEvidenceBeforeAFault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t, storetest.DatabaseURL(t))
	rec := &statusdata.Recorder{Store: st}
	now := time.Now()
	ev := func(family, status string, end time.Time) statusdata.Event {
		return statusdata.Event{EndpointFamily: family, Model: "m", Status: status, Start: end.Add(-time.Second), End: end}
	}
	for i := range 9 {
		rec.Record(ev("messages", map[bool]string{true: "upstream_error", false: "ok"}[i%4 == 1], now))
	}
	rec.Record(ev("images.generations", "ok", now.Add(-3*time.Minute)))
	for range 5 {
		rec.Record(ev("images.generations", "upstream_timeout", now))
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := (&statusdata.Reader{Store: st, Snapshots: func() *snapshot.Snapshot { return nil }}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := component(t, got, "messages")
	if m.GetRequests() != 9 || m.GetFailures() != 2 || m.GetState() != statusdata.Operational {
		t.Errorf("messages: %s with %d of %d failed, want operational", m.GetState(), m.GetFailures(), m.GetRequests())
	}
	if day := m.GetHistory()[statusdata.HistoryDays-1]; day.GetState() != statusdata.Operational {
		t.Errorf("messages today: %s, want operational", day.GetState())
	}
	if img := component(t, got, "images"); img.GetRequests() != 6 || img.GetState() != statusdata.MajorOutage {
		t.Errorf("images: %s with %d requests, want a major outage after 5 failures in a row", img.GetState(), img.GetRequests())
	}
}
