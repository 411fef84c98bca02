package status_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
)

// TestMain: the package's end-to-end tests run the gateway binary on a throwaway PostgreSQL.
func TestMain(m *testing.M) { gatewaytest.Main(m) }

// The chat bot component follows the bot's health reports: no data before the first one
// (on the page; operational in summary.json, which has no such status), operational once
// one arrived through the admin API.
func TestStatusSiteShowsTheChatBotsReports(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	state := func() (status, row string) {
		s, raw := gatewaytest.Summary(t, g.Base)
		for _, c := range s.Components {
			if c.ID == "chat-bot" {
				status = c.Status
			}
		}
		if status == "" {
			t.Fatalf("no chat-bot component in %s", raw)
		}
		resp, err := http.Get(g.Base + "/status")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_, row, _ = strings.Cut(string(page), `<tr id="component-chat-bot">`)
		row, _, _ = strings.Cut(row, "</tr>")
		return status, row
	}
	if status, row := state(); status != "operational" || !strings.Contains(row, "No data") || !strings.Contains(row, "no report yet") {
		t.Fatalf("before any report: %q, page row %q; want operational in summary.json, no data on the page", status, row)
	}
	g.Admin("POST", "/admin/v1/bot/health:report", `{"last_poll_time":"`+time.Now().UTC().Format(time.RFC3339)+`"}`)
	if status, row := state(); status != "operational" || !strings.Contains(row, "Operational") || !strings.Contains(row, "last report") {
		t.Fatalf("after a report: %q, page row %q; want operational", status, row)
	}
}

// The landing page and the models page on a running gateway: /models shows every model that
// GET /v1/catalog publishes, in the currency asked for, with the catalogue's FX status; the
// root is the site's, any other unknown path is still the client routes' 404.
func TestLandingAndModelsPagesShowTheServedCatalogue(t *testing.T) {
	t.Parallel()
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	get := func(path string) (int, string, string) {
		resp, err := http.Get(g.Base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}
	if code, ctype, body := get("/"); code != http.StatusOK || ctype != "text/html; charset=utf-8" || !strings.Contains(body, `href="/models"`) {
		t.Fatalf("/: %d %s\n%.300s", code, ctype, body)
	}
	if code, _, _ := get("/no-such-page"); code != http.StatusNotFound {
		t.Errorf("/no-such-page: %d", code)
	}
	code, _, raw := get("/v1/catalog")
	var cat struct {
		Currency string
		Snapshot struct {
			FxStatus string `json:"fx_status"`
		}
		Families []struct{ Models []struct{ ID string } }
	}
	if err := json.Unmarshal([]byte(raw), &cat); err != nil || code != http.StatusOK {
		t.Fatalf("/v1/catalog: %d %v", code, err)
	}
	code, ctype, page := get("/models?currency=" + cat.Currency)
	if code != http.StatusOK || ctype != "text/html; charset=utf-8" {
		t.Fatalf("/models: %d %s", code, ctype)
	}
	n := 0
	for _, f := range cat.Families {
		for _, m := range f.Models {
			n++
			if !strings.Contains(page, `id="m-`+m.ID+`"`) {
				t.Errorf("/models lacks %s", m.ID)
			}
		}
	}
	if n == 0 || !strings.Contains(page, `class="fx-`+cat.Snapshot.FxStatus+`"`) || !strings.Contains(page, " "+cat.Currency+" per ") {
		t.Errorf("/models: %d models in the catalogue, FX %s, currency %s:\n%s", n, cat.Snapshot.FxStatus, cat.Currency, page)
	}
	if code, _, body := get("/models?currency=XYZ"); code != http.StatusBadRequest || !strings.Contains(body, "invalid_catalog_currency") {
		t.Errorf("/models?currency=XYZ: %d %s", code, body)
	}
}
