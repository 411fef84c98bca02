package status

import (
	"context"
	"encoding/json"
	"flag"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	statusv1 "modelgateway/gen/gateway/status/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixed is the core's answer the front tests render: every state, a component without
// traffic, the chat bot, an open incident, a maintenance, a resolved incident, and the
// three kinds of capability cell (verified with parameters, verified none, unknown).
type fixed struct{ resp *statusv1.GetStatusResponse }

func (f fixed) GetStatus(context.Context, *statusv1.GetStatusRequest, ...grpc.CallOption) (*statusv1.GetStatusResponse, error) {
	return f.resp, nil
}

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func tsAt(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(t0.Add(d)) }

func history(states ...string) []*statusv1.Day {
	var out []*statusv1.Day
	for i := range 90 {
		d := &statusv1.Day{Date: t0.AddDate(0, 0, i-89).Format(time.DateOnly), State: "no_data"}
		if j := i - (90 - len(states)); j >= 0 {
			d.State, d.Requests = states[j], 100
		}
		out = append(out, d)
	}
	return out
}

func fixture() *statusv1.GetStatusResponse {
	comp := func(id, name, state string, req, fail int64, ratio, p50, p95 float64) *statusv1.Component {
		c := &statusv1.Component{Id: id, Name: name, State: state, Description: "endpoint families of " + name, Requests: req, Failures: fail, History: history("operational", "degraded_performance", state)}
		if req > 0 {
			c.SuccessRatio, c.P50Ms, c.P95Ms = wrapperspb.Double(ratio), wrapperspb.Double(p50), wrapperspb.Double(p95)
		}
		return c
	}
	return &statusv1.GetStatusResponse{
		GenerateTime: timestamppb.New(t0), WindowMinutes: 30,
		Components: []*statusv1.Component{
			comp("chat-completions", "Chat completions", "operational", 1200, 3, 0.9975, 250, 1000),
			comp("responses", "Responses", "degraded_performance", 100, 3, 0.97, 400, 2500),
			comp("messages", "Messages", "partial_outage", 40, 8, 0.8, 600, 4000),
			comp("content-generation", "Content generation", "major_outage", 10, 9, 0.1, 100, 150),
			{Id: "embeddings", Name: "Embeddings, rerank, moderation", State: "no_data", Description: "no traffic", History: history()},
			{Id: "admin-api", Name: "Admin API", State: "operational", Requests: 5, SuccessRatio: wrapperspb.Double(1), P50Ms: wrapperspb.Double(10), P95Ms: wrapperspb.Double(25), History: history("operational")},
			{Id: "chat-bot", Name: "Chat bot", State: "operational", LastReportTime: tsAt(-30 * time.Second), History: history()},
		},
		Incidents: []*statusv1.Incident{
			{Id: "inc-1", Kind: "incident", Title: "Messages answers fail for some models", Status: "identified", Impact: "major",
				Components: []string{"messages"}, CreateTime: tsAt(-time.Hour), UpdateTime: tsAt(-10 * time.Minute),
				Updates: []*statusv1.IncidentUpdate{
					{Id: "u2", Status: "identified", Body: "An upstream region is down; traffic moves to the fallback route.", CreateTime: tsAt(-10 * time.Minute)},
					{Id: "u1", Status: "investigating", Body: "We are looking into failed <messages> requests.", CreateTime: tsAt(-time.Hour)},
				}},
			{Id: "mnt-1", Kind: "maintenance", Title: "Database upgrade", Status: "scheduled", Impact: "none", Components: []string{"admin-api"},
				CreateTime: tsAt(-2 * time.Hour), UpdateTime: tsAt(-2 * time.Hour), ScheduledFor: tsAt(24 * time.Hour), ScheduledUntil: tsAt(25 * time.Hour),
				Updates: []*statusv1.IncidentUpdate{{Id: "u3", Status: "scheduled", Body: "Admin writes pause for up to an hour.", CreateTime: tsAt(-2 * time.Hour)}}},
			{Id: "inc-0", Kind: "incident", Title: "Slow realtime sessions", Status: "resolved", Impact: "minor", CreateTime: tsAt(-48 * time.Hour),
				UpdateTime: tsAt(-47 * time.Hour), ResolveTime: tsAt(-47 * time.Hour),
				Updates: []*statusv1.IncidentUpdate{{Id: "u0", Status: "resolved", Body: "Fixed.", CreateTime: tsAt(-47 * time.Hour)}}},
		},
		Models: []*statusv1.ModelStatus{
			{Id: "gpt-x", DisplayName: "GPT X", Family: "openai", EndpointFamilies: []*statusv1.EndpointStatus{
				{EndpointFamily: "chat.completions", State: "operational", Requests: 50, Verified: true, OptionalParameters: []string{"temperature", "max_tokens", "stream"}, VerifyTime: tsAt(-24 * time.Hour), LastSuccessTime: tsAt(-time.Minute)},
				{EndpointFamily: "responses", State: "no_data", Verified: true, OptionalParameters: []string{}, VerifyTime: tsAt(-24 * time.Hour)},
			}},
			{Id: "org/claude-y", DisplayName: "Claude Y", Family: "anthropic", EndpointFamilies: []*statusv1.EndpointStatus{
				{EndpointFamily: "messages", State: "major_outage", Requests: 4, Failures: 4, LastSuccessTime: tsAt(-3 * time.Hour)},
			}},
		},
	}
}

func server(t *testing.T, resp *statusv1.GetStatusResponse) *httptest.Server {
	t.Helper()
	h, err := New(Config{Status: fixed{resp}, Catalog: catalogue{}, BaseURL: "https://gw.example.com/", BotURL: "https://t.me/example_gateway_bot"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once, then read the file)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file; run go test ./front/status -update and read the diff", name)
	}
}

func TestPagesMatchGoldenFilesAndCarryAStrictCSP(t *testing.T) {
	t.Parallel()
	srv := server(t, fixture())
	for _, tc := range []struct{ path, golden, ctype string }{
		{"/status", "status.golden.html", "text/html; charset=utf-8"},
		{"/", "home.golden.html", "text/html; charset=utf-8"},
		{"/models?currency=USD", "models-usd.golden.html", "text/html; charset=utf-8"},
		{"/docs", "docs.golden.html", "text/html; charset=utf-8"},
		{"/status/api/v2/summary.json", "summary.golden.json", "application/json"},
		{"/status/models.json", "models.golden.json", "application/json"},
		{"/status/api/v2/status.json", "status.golden.json", "application/json"},
		{"/status/api/v2/components.json", "components.golden.json", "application/json"},
		{"/status/api/v2/incidents.json", "incidents.golden.json", "application/json"},
		{"/status/api/v2/scheduled-maintenances.json", "scheduled-maintenances.golden.json", "application/json"},
	} {
		resp, body := get(t, srv.URL+tc.path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.ctype {
			t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != CSP || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
		golden(t, tc.golden, body)
		if strings.HasSuffix(tc.path, ".json") {
			continue
		}
		for _, banned := range []string{"<script", "http://", "style=", "onclick", "@import", "fonts.googleapis"} {
			if strings.Contains(string(body), banned) {
				t.Errorf("%s contains %q: it must work offline under the CSP", tc.path, banned)
			}
		}
	}
	resp, _ := get(t, srv.URL+"/status/style.css")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Errorf("style.css: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, body := get(t, srv.URL+"/status/nope")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"code":"not_found"`) {
		t.Errorf("unknown status path: %d %s", resp.StatusCode, body)
	}
}

func TestDocsShowTheConfiguredBaseURLPerProtocol(t *testing.T) {
	t.Parallel()
	_, body := get(t, server(t, fixture()).URL+"/docs")
	page := html.UnescapeString(string(body))
	for _, want := range []string{
		`OpenAI(base_url="https://gw.example.com/v1")`,     // chat-completions and responses: {base_url}/v1
		`Anthropic(base_url="https://gw.example.com")`,     // messages: no /v1 suffix
		`export ANTHROPIC_BASE_URL=https://gw.example.com`, // Claude Code
		`base_url = "https://gw.example.com/v1"`,           // Codex CLI
		`export GOOGLE_GEMINI_BASE_URL=https://gw.example.com`,
		`<code>https://gw.example.com/v1beta</code>`,
		`<code>wss://gw.example.com/v1/realtime</code>`,
		`href="https://t.me/example_gateway_bot"`,
		`<code>/newkey [name]</code>`,
		`<code>insufficient_balance</code></th><td>402</td>`,
		`<th scope="row">Content-generation JSON body</th><td>20 MiB</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("docs lack %q", want)
		}
	}
}

// Strict decoding: the JSON has exactly the fields of the Statuspage shape (plus metrics)
// and of contract.md's models.json, with the types they promise.
func TestJSONShapesDecodeStrictly(t *testing.T) {
	t.Parallel()
	srv := server(t, fixture())
	type incidentUpdate struct {
		ID         string `json:"id"`
		IncidentID string `json:"incident_id"`
		Status     string `json:"status"`
		Body       string `json:"body"`
		CreatedAt  string `json:"created_at"`
		UpdatedAt  string `json:"updated_at"`
		DisplayAt  string `json:"display_at"`
	}
	type incident struct {
		ID              string           `json:"id"`
		Name            string           `json:"name"`
		Status          string           `json:"status"`
		Impact          string           `json:"impact"`
		CreatedAt       string           `json:"created_at"`
		UpdatedAt       string           `json:"updated_at"`
		StartedAt       string           `json:"started_at"`
		ResolvedAt      *string          `json:"resolved_at"`
		Shortlink       string           `json:"shortlink"`
		PageID          string           `json:"page_id"`
		IncidentUpdates []incidentUpdate `json:"incident_updates"`
		Components      []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"components"`
		ScheduledFor   *string `json:"scheduled_for"`
		ScheduledUntil *string `json:"scheduled_until"`
	}
	var sum struct {
		Page struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			URL       string `json:"url"`
			TimeZone  string `json:"time_zone"`
			UpdatedAt string `json:"updated_at"`
		} `json:"page"`
		Status struct {
			Indicator   string `json:"indicator"`
			Description string `json:"description"`
		} `json:"status"`
		Components []struct {
			ID                 string  `json:"id"`
			Name               string  `json:"name"`
			Status             string  `json:"status"`
			Description        string  `json:"description"`
			Position           int     `json:"position"`
			UpdatedAt          string  `json:"updated_at"`
			PageID             string  `json:"page_id"`
			GroupID            *string `json:"group_id"`
			Group              bool    `json:"group"`
			Showcase           bool    `json:"showcase"`
			OnlyShowIfDegraded bool    `json:"only_show_if_degraded"`
			Metrics            struct {
				WindowMinutes int      `json:"window_minutes"`
				Requests      int64    `json:"requests"`
				Failures      int64    `json:"failures"`
				SuccessRatio  *float64 `json:"success_ratio"`
				P50Ms         *float64 `json:"p50_ms"`
				P95Ms         *float64 `json:"p95_ms"`
				LastReportAt  *string  `json:"last_report_at"`
			} `json:"metrics"`
		} `json:"components"`
		Incidents             []incident `json:"incidents"`
		ScheduledMaintenances []incident `json:"scheduled_maintenances"`
	}
	_, body := get(t, srv.URL+"/status/api/v2/summary.json")
	strict(t, body, &sum)
	if sum.Page.URL != "https://gw.example.com/status" || sum.Page.UpdatedAt != "2026-11-24T12:00:00Z" {
		t.Errorf("page: %+v", sum.Page)
	}
	// The worst component is a major outage: critical.
	if sum.Status.Indicator != "critical" || sum.Status.Description != "Major Service Outage" {
		t.Errorf("status: %+v", sum.Status)
	}
	if len(sum.Components) != 7 || sum.Components[0].ID != "chat-completions" || sum.Components[0].Status != "operational" || *sum.Components[0].Metrics.SuccessRatio != 0.9975 {
		t.Errorf("first component: %+v", sum.Components[0])
	}
	emb := sum.Components[4]
	if emb.Status != "operational" || emb.Metrics.SuccessRatio != nil || emb.Metrics.P50Ms != nil || emb.Metrics.Requests != 0 {
		t.Errorf("a component without traffic: %+v, want operational (Statuspage has no no_data) and null numbers", emb)
	}
	if bot := sum.Components[6]; bot.Metrics.LastReportAt == nil || *bot.Metrics.LastReportAt != "2026-11-24T11:59:30Z" {
		t.Errorf("chat bot: %+v", bot)
	}
	// Only what is open: the resolved incident is on the page, not in summary.json.
	if len(sum.Incidents) != 1 || sum.Incidents[0].ID != "inc-1" || len(sum.Incidents[0].IncidentUpdates) != 2 ||
		sum.Incidents[0].Components[0].Name != "Messages" || sum.Incidents[0].ResolvedAt != nil {
		t.Errorf("incidents: %+v", sum.Incidents)
	}
	if len(sum.ScheduledMaintenances) != 1 || *sum.ScheduledMaintenances[0].ScheduledFor != "2026-11-25T12:00:00Z" {
		t.Errorf("maintenances: %+v", sum.ScheduledMaintenances)
	}

	var models struct {
		Models []struct {
			ID               string `json:"id"`
			DisplayName      string `json:"display_name"`
			Family           string `json:"family"`
			EndpointFamilies []struct {
				EndpointFamily     string    `json:"endpoint_family"`
				Status             string    `json:"status"`
				Requests           int64     `json:"requests"`
				Failures           int64     `json:"failures"`
				OptionalParameters *[]string `json:"optional_parameters"`
				VerifiedAt         *string   `json:"verified_at"`
				LastSuccessAt      *string   `json:"last_success_at"`
			} `json:"endpoint_families"`
		} `json:"models"`
	}
	_, body = get(t, srv.URL+"/status/models.json")
	strict(t, body, &models)
	if len(models.Models) != 2 {
		t.Fatalf("models: %+v", models)
	}
	chat, resp, msgs := models.Models[0].EndpointFamilies[0], models.Models[0].EndpointFamilies[1], models.Models[1].EndpointFamilies[0]
	if chat.OptionalParameters == nil || strings.Join(*chat.OptionalParameters, ",") != "temperature,max_tokens,stream" || *chat.VerifiedAt != "2026-11-23T12:00:00Z" {
		t.Errorf("verified cell: %+v", chat)
	}
	if resp.OptionalParameters == nil || len(*resp.OptionalParameters) != 0 || resp.Status != "no_data" || resp.LastSuccessAt != nil {
		t.Errorf("verified-none cell: %+v, want [] and no data", resp)
	}
	if msgs.OptionalParameters != nil || msgs.VerifiedAt != nil || msgs.Status != "major_outage" || *msgs.LastSuccessAt != "2026-11-24T09:00:00Z" {
		t.Errorf("unknown cell: %+v, want null parameters (unknown, passed through)", msgs)
	}
	if !strings.Contains(string(body), `"optional_parameters": []`) || !strings.Contains(string(body), `"optional_parameters": null`) {
		t.Errorf("models.json must tell [] (verified none) from null (unknown): %s", body)
	}
}

func strict(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("strict decode: %v\n%s", err, body)
	}
}

func TestNoTrafficAnywhereSaysNoDataNotOperational(t *testing.T) {
	t.Parallel()
	resp := &statusv1.GetStatusResponse{GenerateTime: timestamppb.New(t0), WindowMinutes: 30, Components: []*statusv1.Component{
		{Id: "chat-completions", Name: "Chat completions", State: "no_data", History: history()},
	}}
	srv := server(t, resp)
	_, body := get(t, srv.URL+"/status")
	if !strings.Contains(string(body), `class="banner s-no_data"`) || !strings.Contains(string(body), "No data: nothing was measured") || strings.Contains(string(body), "100") {
		t.Errorf("status page without traffic:\n%s", body)
	}
	if strings.Contains(string(body), "All Systems Operational") {
		t.Error("a page without data claims all systems operational")
	}
}

// The landing page says what the gateway is and where to go next: every page of the site, the
// base URL to give an SDK, and the chat bot only when one is configured.
func TestLandingPageLinksTheSiteAndTheBaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, bot string
	}{
		{"with bot", "https://t.me/example_gateway_bot"},
		{"without bot", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(Config{Status: fixed{fixture()}, BaseURL: "https://gw.example.com/", BotURL: tc.bot})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			resp, body := get(t, srv.URL+"/")
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Fatalf("/: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			page := html.UnescapeString(string(body))
			for _, want := range []string{
				`href="/models"`, `href="/status"`, `href="/docs"`, `href="/status/api/v2/summary.json"`,
				`<code class="url" id="base-url">https://gw.example.com</code>`,
				`<code class="url">https://gw.example.com/v1</code>`, // OpenAI SDKs
				`<code>ANTHROPIC_API_KEY</code>`,
			} {
				if !strings.Contains(page, want) {
					t.Errorf("landing page lacks %q", want)
				}
			}
			if got := strings.Contains(page, `href="https://t.me/example_gateway_bot"`); got != (tc.bot != "") {
				t.Errorf("bot link shown %v with GATEWAY_BOT_URL %q", got, tc.bot)
			}
			if !strings.Contains(page, "operator of this gateway") && tc.bot == "" {
				t.Error("without a bot the page must say where keys come from")
			}
		})
	}
}

// The other Statuspage v2 documents: the same page and parts as summary.json, component
// statuses only in Statuspage's four words, and incidents.json / scheduled-maintenances.json
// with the resolved ones too (summary.json has only what is open).
func TestStatuspageDocuments(t *testing.T) {
	t.Parallel()
	srv := server(t, fixture())
	type ref struct {
		ID         string  `json:"id"`
		Status     string  `json:"status"`
		ResolvedAt *string `json:"resolved_at"`
	}
	var doc struct {
		Page struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		} `json:"page"`
		Status *struct {
			Indicator string `json:"indicator"`
		} `json:"status"`
		Components            []ref `json:"components"`
		Incidents             []ref `json:"incidents"`
		ScheduledMaintenances []ref `json:"scheduled_maintenances"`
	}
	read := func(name string) {
		t.Helper()
		doc.Status, doc.Components, doc.Incidents, doc.ScheduledMaintenances = nil, nil, nil, nil
		resp, body := get(t, srv.URL+"/status/api/v2/"+name)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc.Page.ID != PageID || doc.Page.URL != "https://gw.example.com/status" {
			t.Errorf("%s: page %+v", name, doc.Page)
		}
	}
	read("status.json")
	if doc.Status == nil || doc.Status.Indicator != "critical" || doc.Components != nil {
		t.Errorf("status.json: %+v", doc)
	}
	allowed := map[string]bool{"operational": true, "degraded_performance": true, "partial_outage": true, "major_outage": true}
	for _, name := range []string{"components.json", "summary.json"} {
		read(name)
		if len(doc.Components) != 7 {
			t.Fatalf("%s: %d components", name, len(doc.Components))
		}
		got := map[string]string{}
		for _, c := range doc.Components {
			got[c.ID] = c.Status
			if !allowed[c.Status] {
				t.Errorf("%s: component %s is %q, not a Statuspage status", name, c.ID, c.Status)
			}
		}
		// Mapped, not flattened: the fixture's outages stay, no data becomes operational.
		if got["embeddings"] != "operational" || got["content-generation"] != "major_outage" || got["responses"] != "degraded_performance" {
			t.Errorf("%s: %v", name, got)
		}
	}
	read("incidents.json")
	if len(doc.Incidents) != 2 || doc.Incidents[0].ID != "inc-1" || doc.Incidents[0].ResolvedAt != nil ||
		doc.Incidents[1].ID != "inc-0" || doc.Incidents[1].ResolvedAt == nil || *doc.Incidents[1].ResolvedAt != "2026-11-22T13:00:00Z" {
		t.Errorf("incidents.json: %+v, want the open and the resolved incident", doc.Incidents)
	}
	read("scheduled-maintenances.json")
	if len(doc.ScheduledMaintenances) != 1 || doc.ScheduledMaintenances[0].ID != "mnt-1" || doc.Incidents != nil {
		t.Errorf("scheduled-maintenances.json: %+v", doc)
	}
}

// Each component's history carries its uptime over the 90 days: the share of counted
// requests served, floored (one failure in 100 000 is not 100 %), and "no data" without any.
func TestHistoryShowsUptimeOverNinetyDays(t *testing.T) {
	t.Parallel()
	days := history("operational", "degraded_performance")
	days[88].Requests, days[89].Requests, days[89].Failures = 50000, 50000, 1
	resp := &statusv1.GetStatusResponse{GenerateTime: timestamppb.New(t0), WindowMinutes: 30, Components: []*statusv1.Component{
		{Id: "chat-completions", Name: "Chat completions", State: "operational", History: days},
		{Id: "clean", Name: "Clean", State: "operational", History: history("operational")},
		{Id: "quiet", Name: "Quiet", State: "no_data", History: history()},
	}}
	_, body := get(t, server(t, resp).URL+"/status")
	for _, want := range []string{
		"Uptime over 90 days: 99.99 % of 100000 requests served",
		"Uptime over 90 days: 100.00 % of 100 requests served",
		"Uptime over 90 days: no data",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
}
