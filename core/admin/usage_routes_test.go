package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
	"modelgateway/front/admincli"
)

// Usage per key through the admin HTTP routes (issue 32): requests of two keys, charged by
// the real request path, are listed per key and page by page, each once, and summed by key
// with costs that add up to the balance the ledger lost; `gateway admin` reaches the summary
// over the same route; bad filters get invalid_request.
func TestUsagePerKeyOverTheAdminRoutes(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	keyA, pid := g.NewProfile("usage-1", "1")
	kb := g.Admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"b","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	keyB, keyBID := kb["secret"].(string), kb["key"].(map[string]any)["id"].(string)
	sent := map[string][]string{keyA: {"ua-1", "ua-2", "ua-3"}, keyB: {"ub-1", "ub-2"}}
	for _, key := range []string{keyA, keyB} {
		for _, id := range sent[key] {
			if status, _, raw := g.PostAs(key, "/v1/chat/completions", map[string]string{"X-Request-Id": id}, gatewaytest.MoneyBody); status != 200 {
				t.Fatalf("%s: %d %s", id, status, raw)
			}
		}
	}
	balance := gatewaytest.Settled(t, g.Pool(), pid, 5)
	spent := decimal.NewFromInt(1).Sub(balance)
	if !spent.Equal(gatewaytest.MoneyCost.Mul(decimal.NewFromInt(5))) {
		t.Fatalf("spent %s on five requests", spent)
	}
	usage := func(query string) (ids []string, next string) {
		t.Helper()
		out := g.Admin("GET", "/admin/v1/profiles/"+pid+"/usage?"+query, "")
		for _, r := range out["records"].([]any) {
			ids = append(ids, r.(map[string]any)["request_id"].(string))
		}
		next, _ = out["next_page_token"].(string)
		return ids, next
	}

	// Every key, then key B alone.
	if all, _ := usage(""); len(all) != 5 {
		t.Fatalf("unfiltered: %v", all)
	}
	if b, _ := usage("key_id=" + keyBID); !slices.Equal(sorted(b), sent[keyB]) {
		t.Errorf("key B's records: %v", b)
	}
	// A range that ends before the requests, and one that holds them.
	now := time.Now().UTC()
	if none, _ := usage("end_time=" + url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339))); len(none) != 0 {
		t.Errorf("before the requests: %v", none)
	}
	in := "start_time=" + url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339)) + "&end_time=" + url.QueryEscape(now.Add(time.Hour).Format(time.RFC3339))
	if some, _ := usage(in); len(some) != 5 {
		t.Errorf("in the range: %v", some)
	}
	// Pages of two: three pages, every record once.
	var paged []string
	tok, pages := "", 0
	for {
		ids, next := usage(in + "&page_size=2&page_token=" + url.QueryEscape(tok))
		paged, tok, pages = append(paged, ids...), next, pages+1
		if tok == "" || pages > 5 {
			break
		}
	}
	if want := sorted(append(slices.Clone(sent[keyA]), sent[keyB]...)); pages != 3 || !slices.Equal(sorted(paged), want) {
		t.Errorf("%d pages of %v, want 3 of %v", pages, paged, want)
	}

	// The summary by key, model and day: two rows, and they add up to what the ledger took.
	sum := g.Admin("GET", "/admin/v1/profiles/"+pid+"/usage:summary?"+in, "")
	rows := sum["rows"].([]any)
	total := decimal.Zero
	byKey := map[string]string{}
	for _, r := range rows {
		row := r.(map[string]any)
		c := decimal.RequireFromString(row["cost"].(string))
		total = total.Add(c)
		byKey[row["key_id"].(string)] = row["requests"].(string) + " " + c.String()
		if row["model"] != "m-money" || row["day"] != now.Format(time.DateOnly) && row["day"] != now.Add(-time.Minute).Format(time.DateOnly) {
			t.Errorf("summary row %v", row)
		}
	}
	if len(rows) != 2 || byKey[keyBID] != "2 0.024" || !total.Equal(spent) {
		t.Errorf("summary %v: total %s, the ledger took %s", rows, total, spent)
	}

	// `gateway admin get-usage-summary` over the HTTP route, grouped by key alone.
	t.Setenv("GATEWAY_ADMIN_TOKEN", gatewaytest.AdminToken)
	var out bytes.Buffer
	if err := admincli.Admin(context.Background(), []string{"-http-addr", g.Base, "get-usage-summary", "--id=" + pid, "--group_by=key", "--key_id=" + keyBID}, &out); err != nil {
		t.Fatal(err)
	}
	var cli struct {
		Rows []struct {
			KeyID string `json:"key_id"`
			Model string `json:"model"`
			Day   string `json:"day"`
			Cost  string `json:"cost"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &cli); err != nil {
		t.Fatal(err)
	}
	if len(cli.Rows) != 1 || cli.Rows[0].KeyID != keyBID || cli.Rows[0].Cost != "0.024" || cli.Rows[0].Model != "" || cli.Rows[0].Day != "" {
		t.Errorf("gateway admin get-usage-summary: %s", out.String())
	}

	// Bad filters are refused (their good forms passed above); a page token is good only for the filter it was made with.
	_, first := usage("page_size=2")
	for _, path := range []string{
		"/usage?key_id=nope",
		"/usage?page_size=-1",
		"/usage?start_time=" + url.QueryEscape(now.Format(time.RFC3339)) + "&end_time=" + url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339)),
		"/usage?page_size=2&key_id=" + keyBID + "&page_token=" + url.QueryEscape(first),
		"/usage:summary?group_by=week",
	} {
		status, _, body := g.Do("GET", "/admin/v1/profiles/"+pid+path, gatewaytest.Bearer(gatewaytest.AdminToken), "")
		if e, _ := body["error"].(map[string]any); status != 400 || e["code"] != "invalid_request_error" {
			t.Errorf("%s: %d %v", path, status, body)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
