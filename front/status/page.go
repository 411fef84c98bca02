package status

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	statusv1 "modelgateway/gen/gateway/status/v1"
)

var funcs = template.FuncMap{}

// words writes every state out: colour is never the only carrier of meaning.
func words(state string) string {
	switch state {
	case "operational":
		return "Operational"
	case "degraded_performance":
		return "Degraded performance"
	case "partial_outage":
		return "Partial outage"
	case "major_outage":
		return "Major outage"
	case "no_data":
		return "No data"
	}
	return state
}

type view struct {
	BaseURL, Generated string
	Window             int32
	Overall            Indicator
	// OverallState is the state class of the banner.
	OverallState string
	Components   []compView
	Incidents    []incView
	Maintenance  []incView
	Resolved     []incView
	Models       []modelView
}

type compView struct {
	ID, Name, Description, State, Words string
	Ratio, P50, P95, Requests           string
	LastReport                          string
	History                             []dayView
	HistoryFrom, HistoryTo              string
	HistorySummary                      string
	// Uptime is the share of counted requests served over the history, or "no data".
	Uptime string
}

type dayView struct {
	Date, State, Words string
	Requests           int64
}

type incView struct {
	ID, Kind, Title, Status, Impact, Components, Window string
	Updates                                             []updView
}

type updView struct{ Status, Body, At string }

type modelView struct {
	ID, DisplayName string
	Rows            []endpointView
}

type endpointView struct {
	Family, State, Words, Params, VerifiedAt, LastSuccess, Numbers string
	Verified                                                       bool
}

func when(t interface{ AsTime() time.Time }) string {
	return t.AsTime().UTC().Format("2006-01-02 15:04 UTC")
}

func pageData(st *statusv1.GetStatusResponse, base string) view {
	v := view{BaseURL: base, Generated: when(st.GetGenerateTime()), Window: st.GetWindowMinutes(), Overall: indicator(st)}
	v.OverallState = map[string]string{"none": "operational", "minor": "degraded_performance", "major": "partial_outage", "critical": "major_outage"}[v.Overall.Indicator]
	if strings.HasPrefix(v.Overall.Description, "No data") {
		v.OverallState = "no_data"
	}
	names := map[string]string{}
	for _, c := range st.GetComponents() {
		names[c.GetId()] = c.GetName()
		cv := compView{ID: c.GetId(), Name: c.GetName(), Description: c.GetDescription(), State: c.GetState(), Words: words(c.GetState()),
			Ratio: "no data", P50: "no data", P95: "no data", Requests: fmt.Sprint(c.GetRequests())}
		if r := c.SuccessRatio; r != nil {
			cv.Ratio = fmt.Sprintf("%.2f %%", r.GetValue()*100)
		}
		if p := c.P50Ms; p != nil {
			cv.P50 = fmt.Sprintf("≤ %g ms", p.GetValue())
		}
		if p := c.P95Ms; p != nil {
			cv.P95 = fmt.Sprintf("≤ %g ms", p.GetValue())
		}
		if c.GetId() == "chat-bot" {
			cv.Requests = "n/a"
			cv.LastReport = "no report yet"
			if t := c.GetLastReportTime(); t != nil {
				cv.LastReport = "last report " + when(t)
			}
		}
		bad, measured := 0, 0
		var requests, failures int64
		for _, d := range c.GetHistory() {
			requests, failures = requests+d.GetRequests(), failures+d.GetFailures()
			cv.History = append(cv.History, dayView{Date: d.GetDate(), State: d.GetState(), Words: words(d.GetState()), Requests: d.GetRequests()})
			if d.GetState() != "no_data" {
				measured++
			}
			if severity(d.GetState()) > 0 {
				bad++
			}
		}
		if n := len(cv.History); n > 0 {
			cv.HistoryFrom, cv.HistoryTo = cv.History[0].Date, cv.History[n-1].Date
			cv.HistorySummary = fmt.Sprintf("%d days: %d with data, %d with degraded performance or an outage", n, measured, bad)
		}
		cv.Uptime = fmt.Sprintf("Uptime over %d days: no data", len(cv.History))
		if requests > 0 {
			// In hundredths, floored in integers: one failure in 100 000 must not read as 100 %.
			bp := (requests - failures) * 10000 / requests
			cv.Uptime = fmt.Sprintf("Uptime over %d days: %d.%02d %% of %d requests served", len(cv.History), bp/100, bp%100, requests)
		}
		v.Components = append(v.Components, cv)
	}
	for _, in := range st.GetIncidents() {
		iv := incView{ID: in.GetId(), Kind: in.GetKind(), Title: in.GetTitle(), Status: strings.ReplaceAll(in.GetStatus(), "_", " "), Impact: in.GetImpact()}
		var comps []string
		for _, c := range in.GetComponents() {
			comps = append(comps, names[c])
		}
		iv.Components = strings.Join(comps, ", ")
		if in.GetScheduledFor() != nil && in.GetScheduledUntil() != nil {
			iv.Window = when(in.GetScheduledFor()) + " to " + when(in.GetScheduledUntil())
		}
		for _, u := range in.GetUpdates() {
			iv.Updates = append(iv.Updates, updView{Status: strings.ReplaceAll(u.GetStatus(), "_", " "), Body: u.GetBody(), At: when(u.GetCreateTime())})
		}
		switch {
		case in.GetResolveTime() != nil:
			v.Resolved = append(v.Resolved, iv)
		case in.GetKind() == "maintenance":
			v.Maintenance = append(v.Maintenance, iv)
		default:
			v.Incidents = append(v.Incidents, iv)
		}
	}
	for _, m := range st.GetModels() {
		mv := modelView{ID: m.GetId(), DisplayName: m.GetDisplayName()}
		for _, e := range m.GetEndpointFamilies() {
			ev := endpointView{Family: e.GetEndpointFamily(), State: e.GetState(), Words: words(e.GetState()), Verified: e.GetVerified(),
				Params: "unknown, passed through", VerifiedAt: "not verified", LastSuccess: "none recorded"}
			if e.GetRequests() > 0 {
				ev.Numbers = fmt.Sprintf("%d of %d failed", e.GetFailures(), e.GetRequests())
			}
			if n := e.GetRoutesSetAside(); n > 0 {
				// Route health: some upstreams of the cell are cooling down after failures.
				if ev.Numbers != "" {
					ev.Numbers += "; "
				}
				ev.Numbers += fmt.Sprintf("%d of %d routes set aside", n, e.GetRoutes())
			}
			if e.GetVerified() {
				ev.Params = "verified: none"
				if ps := e.GetOptionalParameters(); len(ps) > 0 {
					ev.Params = strings.Join(ps, ", ")
				}
				ev.VerifiedAt = when(e.GetVerifyTime())
			}
			if t := e.GetLastSuccessTime(); t != nil {
				ev.LastSuccess = when(t)
			}
			mv.Rows = append(mv.Rows, ev)
		}
		v.Models = append(v.Models, mv)
	}
	return v
}
