package routing_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"modelgateway/core/routing"
	"modelgateway/core/simulator"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// Affinity is there to keep provider prompt caches warm: on a 1:1 group of two prefix-caching
// simulators, 40 conversations of 8 turns each are routed with their conversation (rendezvous
// hashing) and without (a weighted draw per request). The cached share of input tokens with
// affinity must clearly beat the share without; the numbers go to the log (issue 33's note).
func TestAffinityKeepsPromptCachesWarm(t *testing.T) {
	share := func(affinity bool) float64 {
		sims := map[string]*httptest.Server{}
		snap := &snapshot.Snapshot{Providers: map[string]*store.Provider{}}
		m := &snapshot.Model{Model: store.Model{ID: "pair"}}
		for i, id := range []string{"a", "b"} {
			srv := httptest.NewServer(simulator.New(simulator.Options{PrefixCache: true}))
			t.Cleanup(srv.Close)
			sims[id] = srv
			snap.Providers[id] = &store.Provider{ID: id, Kind: "openai"}
			m.Routes = append(m.Routes, store.Route{ModelID: "pair", Position: i, EndpointFamilies: []string{"chat.completions"}, ProviderID: id, Weight: 1})
		}
		h := routing.NewHealth()
		var cached, input float64
		for c := range 40 {
			msgs := []string{fmt.Sprintf(`{"role":"system","content":"You are assistant number %d; answer briefly and politely."}`, c)}
			conv := routing.Conversation(0)
			if affinity {
				conv = routing.ConversationOf("c", fmt.Sprint("conversation-", c))
			}
			for turn := range 8 {
				msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"question %d of conversation %d, with a few more words"}`, turn, c))
				var buf routing.PlanBuffer
				plan := h.Plan(snap, m, "chat.completions", conv, time.Now(), &buf)
				route := plan.List[0].Route.ProviderID
				plan.Release()
				body := `{"model":"x","max_tokens":8,"messages":[` + strings.Join(msgs, ",") + `]}`
				resp, err := http.Post(sims[route].URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				var a struct {
					Choices []struct{ Message struct{ Content string } }
					Usage   struct {
						PromptTokens        float64 `json:"prompt_tokens"`
						PromptTokensDetails struct {
							CachedTokens float64 `json:"cached_tokens"`
						} `json:"prompt_tokens_details"`
					}
				}
				err = json.NewDecoder(resp.Body).Decode(&a)
				resp.Body.Close()
				if err != nil || len(a.Choices) == 0 {
					t.Fatalf("simulator answer: %v", err)
				}
				answer, _ := json.Marshal(a.Choices[0].Message.Content)
				msgs = append(msgs, `{"role":"assistant","content":`+string(answer)+`}`)
				cached += a.Usage.PromptTokensDetails.CachedTokens
				input += a.Usage.PromptTokens
			}
		}
		return cached / input
	}
	with, without := share(true), share(false)
	t.Logf("cached input share on a 1:1 group, 40 conversations x 8 turns: with affinity %.1f %%, without %.1f %%", 100*with, 100*without)
	if with < without+0.1 {
		t.Errorf("cached share with affinity %.3f, without %.3f: affinity must keep caches warm", with, without)
	}
}
