package main

import (
	"bytes"
	"context"
	"io"
	"modelgateway/core/gatewaytest"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"modelgateway/core/simulator"
	"modelgateway/core/store/storetest"
)

// BenchmarkStoredChain continues a 20-turn stored conversation on a translated model
// (m-anthropic), store:false so that the chain stays 20 turns: "continue" names it by
// previous_response_id, "inline" sends the same 40 items itself (what a client without
// stored responses does), so the difference is the stored chain's own cost. "chain-query"
// is the one statement that reads the chain, alone: the database time per continued
// request. cpu-ns/op counts the whole process (client, gateway, simulator, not PostgreSQL).
func BenchmarkStoredChain(b *testing.B) {
	rec := gatewaytest.StartUpstream(b, simulator.Options{})
	e := startGateway(b, storetest.DatabaseURL(b), adminToken, func(c *Config) {
		c.Env = func(name string) string {
			if name == "UP_KEY" {
				return upstreamKey
			}
			return ""
		}
	})
	e.admin("POST", "/admin/v1/catalog:apply", gatewaytest.GenCatalog(rec.URL))
	g := &genEnv{env: e, up: rec, upURL: rec.URL}
	key, pid := g.newProfile(b, "bench", "1000000")
	client := &http.Client{}
	post := func(body string) []byte {
		req, _ := http.NewRequest("POST", e.base+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d: %s", resp.StatusCode, raw)
		}
		return raw
	}
	prev := ""
	for i := range 20 {
		body := `{"model":"m-anthropic","input":"turn ` + string(rune('a'+i)) + ` tell me more"`
		if prev != "" {
			body += `,"previous_response_id":"` + prev + `"`
		}
		prev = gjson.GetBytes(post(body+"}"), "id").String()
	}
	chain, err := e.g.Store.StoredResponseChain(context.Background(), uuid.MustParse(pid), prev)
	if err != nil || len(chain) != 20 {
		b.Fatalf("chain of %d: %v", len(chain), err)
	}
	var items bytes.Buffer
	for _, l := range chain {
		for _, arr := range [][]byte{l.InputItems, l.Output} {
			inner := bytes.TrimSpace(arr)
			inner = inner[1 : len(inner)-1]
			if items.Len() > 0 {
				items.WriteByte(',')
			}
			items.Write(inner)
		}
	}
	cont := `{"model":"m-anthropic","store":false,"previous_response_id":"` + prev + `","input":"and now?"}`
	inline := `{"model":"m-anthropic","store":false,"input":[` + items.String() + `,{"role":"user","content":"and now?"}]}`
	run := func(body string) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				post(body)
			}
			b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
		}
	}
	b.Run("continue", run(cont))
	b.Run("inline", run(inline))
	b.Run("chain-query", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if _, err := e.g.Store.StoredResponseChain(ctx, uuid.MustParse(pid), prev); err != nil {
				b.Fatal(err)
			}
		}
	})
	var plan string
	rows, err := e.g.Store.Pool.Query(context.Background(), `EXPLAIN (ANALYZE, FORMAT TEXT)
		WITH RECURSIVE chain AS (
			SELECT id, previous_id, input_items, response->'output' AS output, 0 AS depth
			FROM stored_responses WHERE id = $1 AND profile_id = $2
			UNION ALL
			SELECT r.id, r.previous_id, r.input_items, r.response->'output', c.depth + 1
			FROM stored_responses r JOIN chain c ON r.id = c.previous_id WHERE r.profile_id = $2)
		SELECT input_items::text, output::text FROM chain ORDER BY depth DESC`, prev, uuid.MustParse(pid))
	if err == nil {
		for rows.Next() {
			var line string
			_ = rows.Scan(&line)
			plan = line // the last line: execution time
		}
		rows.Close()
	}
	b.Logf("chain query of 20 responses: %s; at %s", plan, time.Now().Format(time.RFC3339))
}
