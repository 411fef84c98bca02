package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkChatBudgeted is BenchmarkChatNonStreamed's gateway path for a key with a budget
// beside a key without one, on one gateway (issue 32: a budget may cost at most 5 % more CPU
// per request, and no transaction more). cpu-ns/op counts this process (gateway, clients and
// the canned upstream, the same for both keys); xact/op the database's commits per request.
// go test -run x -bench ChatBudgeted -benchtime 5000x .
func BenchmarkChatBudgeted(b *testing.B) {
	upstream := cannedUpstream(b)
	e, pid, stop := startBenchGateway(b, upstream)
	defer stop()
	keys := map[string]string{}
	for name, extra := range map[string]string{"unlimited": "", "budgeted": `,"budget":{"amount":"1000000000","period":"MONTH"}`} {
		k := e.admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"`+name+`","allowed_endpoints":["*"],"allowed_models":["*"]`+extra+`}`)
		keys[name] = k["secret"].(string)
	}
	body := []byte(`{"model":"bench-gpt","messages":[{"role":"user","content":"hello #sim:input=20000"}]}`)
	for _, name := range []string{"unlimited", "budgeted", "unlimited", "budgeted"} {
		b.Run(name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			do := func() bool {
				req, _ := http.NewRequest("POST", e.base+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+keys[name])
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return false
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), "usage") {
					b.Errorf("status %d: %s", resp.StatusCode, raw)
					return false
				}
				return true
			}
			for range 200 {
				if !do() {
					b.FailNow()
				}
			}
			xact := func() (n int64) {
				time.Sleep(1100 * time.Millisecond) // backends report their commits at most once a second
				_ = e.g.Store.Pool.QueryRow(context.Background(), `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
				return n
			}
			x0 := xact()
			b.ResetTimer()
			c0 := processCPU()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() && do() {
				}
			})
			cpu := processCPU() - c0
			b.StopTimer()
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(xact()-x0)/float64(b.N), "xact/op")
		})
	}
}
