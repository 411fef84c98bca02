package gatewaytest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// StatusSummary is the status site's summary.json, the parts the tests read.
type StatusSummary struct {
	Status struct {
		Indicator, Description string
	} `json:"status"`
	Components []struct {
		ID, Status string
		Metrics    struct {
			Requests, Failures int64
			SuccessRatio       *float64 `json:"success_ratio"`
			P50Ms              *float64 `json:"p50_ms"`
		} `json:"metrics"`
	} `json:"components"`
	Incidents []struct {
		ID, Name, Status, Impact string
	} `json:"incidents"`
}

// Summary reads summary.json from the gateway at base (http://...), which must answer 200
// with a Content-Security-Policy; it returns the decoded and the raw answer.
func Summary(t testing.TB, base string) (StatusSummary, string) {
	t.Helper()
	resp, err := http.Get(base + "/status/api/v2/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("summary.json: %d %s", resp.StatusCode, raw)
	}
	var s StatusSummary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s, string(raw)
}
