package status

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The site's settings come from the environment; without a public base URL the pages show
// the client listener's own address.
func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name          string
		env           map[string]string
		base, botLink string
	}{
		{"listener", map[string]string{}, "http://127.0.0.1:8080", ""},
		{"public", map[string]string{"GATEWAY_PUBLIC_BASE_URL": "https://gw.example.com", "GATEWAY_BOT_URL": "https://t.me/gw_bot"}, "https://gw.example.com", "https://t.me/gw_bot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ConfigFromEnv(func(k string) string { return tc.env[k] }, "127.0.0.1:8080")
			if c.BaseURL != tc.base || c.BotURL != tc.botLink {
				t.Errorf("got base %q, bot %q; want %q, %q", c.BaseURL, c.BotURL, tc.base, tc.botLink)
			}
		})
	}
}

// Before serves the site's paths itself and hands every other path to the client routes.
func TestBeforeSplitsTheSiteFromTheClientRoutes(t *testing.T) {
	h, err := New(Config{Status: fixed{fixture()}, Catalog: catalogue{}, BaseURL: "https://gw.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	srv := httptest.NewServer(h.Before(next))
	defer srv.Close()
	for _, tc := range []struct {
		path string
		code int
		site bool // answered by the site, with its CSP
	}{
		{"/status", http.StatusOK, true},
		{"/status/api/v2/summary.json", http.StatusOK, true},
		{"/docs", http.StatusOK, true},
		{"/", http.StatusOK, true},
		{"/nope", http.StatusTeapot, false}, // only the root itself is the site's
		{"/models?currency=EUR", http.StatusOK, true},
		{"/models/gpt-x", http.StatusTeapot, false},
		{"/v1/models", http.StatusTeapot, false},
		{"/statusx", http.StatusTeapot, false},
	} {
		resp, _ := get(t, srv.URL+tc.path)
		csp := resp.Header.Get("Content-Security-Policy") == CSP
		if resp.StatusCode != tc.code || csp != tc.site {
			t.Errorf("%s: %d, site's CSP %v; want %d, %v", tc.path, resp.StatusCode, csp, tc.code, tc.site)
		}
	}
}

// Before's short way for API paths answers as the mux it skips would: the same handler, code
// and redirect for clean, unclean and look-alike paths.
func TestBeforeAnswersAsItsMux(t *testing.T) {
	h, err := New(Config{Status: fixed{fixture()}, Catalog: catalogue{}, BaseURL: "https://gw.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Next", r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	})
	mux := http.NewServeMux()
	for _, p := range Paths {
		mux.Handle(p, h)
	}
	mux.Handle("/", next)
	short := 0
	for _, path := range []string{"/v1/chat/completions", "/v1beta/models/m:generateContent", "/v1/models",
		"/v1//chat/completions", "/v1/./models", "/v1/../status", "/v1/x/..", "/v1/.well-known", "/v1", "/v1beta",
		"/v1/", "/v1/status", "/v1/models/a%2Fb", "/status", "/v2/x", "/V1/models"} {
		for _, method := range []string{"GET", "POST"} {
			r := httptest.NewRequest(method, "http://gw"+path, nil)
			want, got := httptest.NewRecorder(), httptest.NewRecorder()
			mux.ServeHTTP(want, r)
			h.Before(next).ServeHTTP(got, r)
			if got.Code != want.Code || got.Header().Get("Location") != want.Header().Get("Location") || got.Header().Get("X-Next") != want.Header().Get("X-Next") {
				t.Errorf("%s %s: %d %q %q, the mux %d %q %q", method, path, got.Code, got.Header().Get("Location"), got.Header().Get("X-Next"),
					want.Code, want.Header().Get("Location"), want.Header().Get("X-Next"))
			}
			if apiPath(r.URL.Path) {
				short++
			}
		}
	}
	if short == 0 {
		t.Fatal("no path took the short way")
	}
}

// The site's answers carry a request id as the client routes' do, so that their access log
// lines have one (they were logged with request_id=""); a client's well-formed id is kept.
func TestSiteAnswersCarryARequestID(t *testing.T) {
	h, err := New(Config{Status: fixed{fixture()}, BaseURL: "https://gw.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	seen := map[string]bool{}
	for _, path := range []string{"/status", "/docs", "/status/api/v2/summary.json", "/status/nope"} {
		resp, body := get(t, srv.URL+path)
		id := resp.Header.Get("X-Request-Id")
		if id == "" || seen[id] {
			t.Errorf("%s: X-Request-Id %q, want a fresh one", path, id)
		}
		seen[id] = true
		if resp.StatusCode == http.StatusNotFound && !strings.Contains(string(body), id) {
			t.Errorf("%s: the error envelope lacks the request id %s: %s", path, id, body)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/status", nil)
	req.Header.Set("X-Request-Id", "client-chosen-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "client-chosen-1" {
		t.Errorf("a client's id: answered %q", got)
	}
}
