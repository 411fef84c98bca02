package bench

// The batch scenario (issue 37, contract.md "Files and batches"): a batch of -batch-items
// chat items run by the gateway's own runner against the canned upstream, first alone (items
// per second and per CPU second of the replica, database transactions per item, peak RSS),
// then beside live requests (their latency with and without a batch running, and what the
// batch gets done meanwhile: live requests go first).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Targets of the batch scenario.
const (
	batchTxTarget   = 0.2 // database transactions per item
	batchRSSTarget  = 150 // MB, the replica's peak RSS while the batch runs alone
	batchLiveSlack  = 2.0 // ms: live p99 while a batch runs, above live p99 without
	batchPollEvery  = 250 * time.Millisecond
	batchModel      = "bench-gpt"
	batchEndTimeout = 10 * time.Minute
)

// batchStatus is what the scenario reads of GET /v1/batches/{id}.
type batchStatus struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	RequestCounts struct {
		Total     int64 `json:"total"`
		Completed int64 `json:"completed"`
		Failed    int64 `json:"failed"`
	} `json:"request_counts"`
}

// runBatch runs the batch scenario and prints it; failed names what went wrong with the
// requests (the numbers are then not valid).
func (b *bench) runBatch(ctx context.Context, w io.Writer) (failed []string, err error) {
	n := b.cfg.batchItems
	if n <= 0 {
		return nil, errors.New("bench: -batch-items must be positive")
	}
	fmt.Fprintf(w, "\n8. batch: %d chat items (%s, canned upstream) run by the gateway on one replica (GATEWAY_BATCH_CONCURRENCY as set, default 4)\n", n, batchModel)
	file, err := b.uploadBatchInput(ctx, n)
	if err != nil {
		return nil, err
	}

	// Alone: from database counters that are complete (statsFlush after the last traffic)
	// to the same after the batch's end.
	if err := sleepCtx(ctx, statsFlush); err != nil {
		return nil, err
	}
	tx0, _, txErr := b.dbCounts(ctx)
	peak := resetPeak(b.gw.cmd.Process.Pid)
	cpu0, err := b.sample(b.gw)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	st, err := b.createBatch(ctx, file)
	if err != nil {
		return nil, err
	}
	polls := 1
	for st.Status != "completed" {
		if st.Status != "in_progress" && st.Status != "validating" && st.Status != "finalizing" {
			return nil, fmt.Errorf("batch %s ended %s (%+v)", st.ID, st.Status, st.RequestCounts)
		}
		if time.Since(start) > batchEndTimeout {
			return nil, fmt.Errorf("batch %s: not completed within %s (%+v)", st.ID, batchEndTimeout, st.RequestCounts)
		}
		if err := sleepCtx(ctx, batchPollEvery); err != nil {
			return nil, err
		}
		if st, err = b.getBatch(ctx, st.ID); err != nil {
			return nil, err
		}
		polls++
	}
	took := time.Since(start)
	cpu1, err := b.sample(b.gw)
	if err != nil {
		return nil, err
	}
	hwm, _, err := memory(b.gw.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	if st.RequestCounts.Completed != int64(n) {
		failed = append(failed, fmt.Sprintf("scenario 8 (%d of %d items completed)", st.RequestCounts.Completed, n))
	}
	txLine := "not measured"
	if txErr == nil {
		if err := sleepCtx(ctx, statsFlush); err != nil {
			return nil, err
		}
		if tx1, _, err := b.dbCounts(ctx); err == nil {
			// Each dbCounts call is a transaction, and so is each poll (create included); the
			// replica's background (heartbeat, sweeps) over the batch and the flush wait is
			// left in: a few per second.
			tx := float64(tx1-tx0-1-int64(polls)) / float64(n)
			txLine = fmt.Sprintf("%.3f (target <= %.1f: %s; %d polls taken off, the replica's background left in)", tx, batchTxTarget, verdict(tx <= batchTxTarget), polls)
		} else {
			txLine = fmt.Sprintf("not measured (%v)", err)
		}
	} else {
		txLine = fmt.Sprintf("not measured (%v)", txErr)
	}
	cpu := (cpu1.cpu - cpu0.cpu).Seconds()
	fmt.Fprintf(w, "  alone: %d items in %s: %.0f items/s, %.0f items per CPU second of the replica (%.0f%% of one core)\n",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds(), float64(n)/max(cpu, 1e-9), 100*cpu/took.Seconds())
	fmt.Fprintf(w, "  database transactions per item: %s\n", txLine)
	over := "whole run: its reset was refused"
	if peak.done {
		over = fmt.Sprintf("over the batch, from %.1f MB", mb(peak.base))
	}
	fmt.Fprintf(w, "  gateway peak RSS (VmHWM, %s) %.1f MB (target < %d MB: %s)\n", over, mb(hwm), batchRSSTarget, verdict(mb(hwm) < batchRSSTarget))

	f, err := b.batchBesideLive(ctx, w, file)
	return append(failed, f...), err
}

// batchBesideLive measures live requests (one client, one at a time, another profile's
// key) without a batch and while a batch runs, in -rounds rounds of -duration/rounds each
// side (a round: live requests alone, then beside a new batch, which is cancelled after), so
// that both sides of a round see the same load of the machine; and what the batches got
// done meanwhile.
func (b *bench) batchBesideLive(ctx context.Context, w io.Writer, file string) (failed []string, err error) {
	key, err := b.newProfileKey(ctx, "bench-live")
	if err != nil {
		return nil, err
	}
	live := target{name: "live", url: b.gwURL + "/v1/chat/completions",
		body:   []byte(`{"model":"` + batchModel + `","messages":[{"role":"user","content":"hello"}]}`),
		header: http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}}
	client := newLoadClient(1)
	defer client.CloseIdleConnections()
	if r := runLoad(ctx, client, live, 1, b.cfg.warmup+time.Second); r.requests == 0 {
		return nil, fmt.Errorf("live warmup: no request succeeded (%s)", r.errorSummary())
	}
	d := b.cfg.duration / time.Duration(b.cfg.rounds)
	var without, during loadResult
	var items int64
	var took time.Duration
	for range b.cfg.rounds {
		without.merge(runLoad(ctx, client, live, 1, d))
		n, t, r, err := b.liveBesideBatch(ctx, client, live, file, d)
		if err != nil {
			return nil, err
		}
		during.merge(r)
		items, took = items+n, took+t
	}
	slices.Sort(without.latencies)
	slices.Sort(during.latencies)
	for _, r := range []loadResult{without, during} {
		if r.errors > 0 {
			failed = append(failed, "scenario 8 live requests ("+r.errorSummary()+")")
		}
	}
	p := func(r loadResult) string {
		return fmt.Sprintf("%d requests, p50 %s, p99 %s", r.requests, ms(r.percentile(50)), ms(r.percentile(99)))
	}
	slack := float64((during.percentile(99) - without.percentile(99)).Microseconds()) / 1000
	fmt.Fprintf(w, "  live requests (1 client, one at a time, %s, another profile; %d rounds of %s each side): without a batch %s; while a batch runs %s\n",
		batchModel, b.cfg.rounds, d, p(without), p(during))
	fmt.Fprintf(w, "  live p99 while a batch runs: %+.2fms (target within %.0fms: %s); the batches meanwhile: %d items in %s (%.0f items/s)\n",
		slack, batchLiveSlack, verdict(slack <= batchLiveSlack), items, took.Round(time.Millisecond), float64(items)/took.Seconds())
	return failed, nil
}

// liveBesideBatch runs live requests for d while a new batch of file runs (or until it
// ends), then cancels the batch and waits for it to stop: the items the batch completed
// meanwhile and the live requests.
func (b *bench) liveBesideBatch(ctx context.Context, client *http.Client, live target, file string, d time.Duration) (int64, time.Duration, loadResult, error) {
	st, err := b.createBatch(ctx, file)
	if err != nil {
		return 0, 0, loadResult{}, err
	}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan loadResult, 1)
	start := time.Now()
	go func() { done <- runLoad(lctx, client, live, 1, d) }()
	var r loadResult
	for waiting := true; waiting; {
		select {
		case r = <-done:
			waiting = false
		case <-time.After(batchPollEvery):
			if s, err := b.getBatch(ctx, st.ID); err == nil && s.Status != "in_progress" && s.Status != "validating" {
				stop() // the batch ended: the rest would be live requests without one
			}
		}
	}
	took := time.Since(start)
	last, err := b.getBatch(ctx, st.ID)
	if err != nil {
		return 0, 0, r, err
	}
	if err := b.cancelBatch(ctx, st.ID); err != nil {
		return 0, 0, r, err
	}
	// The next round's live requests alone start once the replica holds none of its items.
	for deadline := time.Now().Add(30 * time.Second); ; {
		s, err := b.getBatch(ctx, st.ID)
		if err != nil {
			return 0, 0, r, err
		}
		if s.Status == "cancelled" || s.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, r, fmt.Errorf("batch %s: still %s 30s after its cancel", st.ID, s.Status)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return 0, 0, r, err
		}
	}
	return last.RequestCounts.Completed, took, r, nil
}

// uploadBatchInput uploads a JSONL file of n chat items (POST /v1/files, purpose batch).
func (b *bench) uploadBatchInput(ctx context.Context, n int) (string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := mw.WriteField("purpose", "batch"); err != nil {
		return "", err
	}
	fw, err := mw.CreateFormFile("file", "bench.jsonl")
	if err != nil {
		return "", err
	}
	for i := range n {
		fmt.Fprintf(fw, `{"custom_id":"i%d","method":"POST","url":"/v1/chat/completions","body":{"model":%q,"messages":[{"role":"user","content":"hello"}]}}`+"\n", i, batchModel)
	}
	if err := mw.Close(); err != nil {
		return "", err
	}
	var f struct {
		ID string `json:"id"`
	}
	if err := b.call(ctx, http.MethodPost, "/v1/files", mw.FormDataContentType(), &body, &f); err != nil {
		return "", fmt.Errorf("batch input upload: %w", err)
	}
	if f.ID == "" {
		return "", errors.New("batch input upload: no file id")
	}
	return f.ID, nil
}

func (b *bench) createBatch(ctx context.Context, file string) (batchStatus, error) {
	var st batchStatus
	in := `{"input_file_id":"` + file + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`
	err := b.call(ctx, http.MethodPost, "/v1/batches", "application/json", strings.NewReader(in), &st)
	if err == nil && st.ID == "" {
		err = errors.New("no batch id")
	}
	if err != nil {
		return st, fmt.Errorf("create batch: %w", err)
	}
	return st, nil
}

func (b *bench) getBatch(ctx context.Context, id string) (batchStatus, error) {
	var st batchStatus
	if err := b.call(ctx, http.MethodGet, "/v1/batches/"+id, "", nil, &st); err != nil {
		return st, fmt.Errorf("get batch: %w", err)
	}
	return st, nil
}

func (b *bench) cancelBatch(ctx context.Context, id string) error {
	var st batchStatus
	if err := b.call(ctx, http.MethodPost, "/v1/batches/"+id+"/cancel", "application/json", nil, &st); err != nil {
		return fmt.Errorf("cancel batch: %w", err)
	}
	return nil
}

// call sends a request with the bench's key and decodes a 200 answer into out.
func (b *bench) call(ctx context.Context, method, path, contentType string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, b.gwURL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, out)
}

// newProfileKey creates a credited profile of its own and a key of it.
func (b *bench) newProfileKey(ctx context.Context, name string) (string, error) {
	var profile struct {
		ID string `json:"id"`
	}
	ref := name + "-" + fmt.Sprint(time.Now().UnixNano())
	if err := b.admin(ctx, "/admin/v1/profiles", map[string]any{"display_name": name, "external_ref": ref}, &profile); err != nil {
		return "", err
	}
	credit := map[string]any{"amount": "1000000000.00", "reason": "bench", "idempotency_key": ref}
	if err := b.admin(ctx, "/admin/v1/profiles/"+profile.ID+":credit", credit, nil); err != nil {
		return "", err
	}
	var key struct {
		Secret string `json:"secret"`
	}
	policy := map[string]any{"name": name, "allowed_endpoints": []string{"*"}, "allowed_models": []string{"*"}}
	if err := b.admin(ctx, "/admin/v1/profiles/"+profile.ID+"/keys", policy, &key); err != nil {
		return "", err
	}
	if key.Secret == "" {
		return "", errors.New("admin CreateKey returned no secret")
	}
	// A new key is in force within a second.
	return key.Secret, sleepCtx(ctx, 1500*time.Millisecond)
}
