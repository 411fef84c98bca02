package status

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	statusv1 "modelgateway/gen/gateway/status/v1"
)

// The Atlassian Statuspage summary.json shape (contract.md), so that existing status tools
// and widgets can read the page. Fields Statuspage defines are spelled as it spells them;
// "metrics" is this gateway's addition with the numbers behind a state.

// Summary is GET /status/api/v2/summary.json.
type Summary struct {
	Page                  Page          `json:"page"`
	Status                Indicator     `json:"status"`
	Components            []Component   `json:"components"`
	Incidents             []Incident    `json:"incidents"`
	ScheduledMaintenances []Maintenance `json:"scheduled_maintenances"`
}

// Page names the page.
type Page struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	URL       string `json:"url"`
	TimeZone  string `json:"time_zone"`
	UpdatedAt string `json:"updated_at"`
}

// Indicator is the overall state: none, minor, major or critical.
type Indicator struct {
	Indicator   string `json:"indicator"`
	Description string `json:"description"`
}

// Component is one status component. Status is operational, degraded_performance,
// partial_outage or major_outage; operational also when nothing was measured (see
// statuspageStatus).
type Component struct {
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
	Metrics            Metrics `json:"metrics"`
}

// Metrics are the numbers behind a component's state over the window; null where nothing
// was measured.
type Metrics struct {
	WindowMinutes  int32    `json:"window_minutes"`
	Requests       int64    `json:"requests"`
	Failures       int64    `json:"failures"`
	SuccessRatio   *float64 `json:"success_ratio"`
	P50Ms          *float64 `json:"p50_ms"`
	P95Ms          *float64 `json:"p95_ms"`
	LastReportTime *string  `json:"last_report_at,omitempty"`
}

// Incident is an unresolved incident.
type Incident struct {
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
	IncidentUpdates []IncidentUpdate `json:"incident_updates"`
	Components      []Ref            `json:"components"`
}

// Maintenance is a maintenance that is scheduled or under way.
type Maintenance struct {
	Incident
	ScheduledFor   *string `json:"scheduled_for"`
	ScheduledUntil *string `json:"scheduled_until"`
}

// IncidentUpdate is one update, newest first.
type IncidentUpdate struct {
	ID         string `json:"id"`
	IncidentID string `json:"incident_id"`
	Status     string `json:"status"`
	Body       string `json:"body"`
	CreatedAt  string `json:"created_at"`
	UpdatedAt  string `json:"updated_at"`
	DisplayAt  string `json:"display_at"`
}

// Ref names an affected component.
type Ref struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// PageID is the id of the one page.
const PageID = "gateway"

func stamp(t *timestamppb.Timestamp) string {
	return t.AsTime().UTC().Format(time.RFC3339)
}

// optStamp is null for an unset time.
func optStamp(t *timestamppb.Timestamp) *string {
	if t == nil {
		return nil
	}
	s := stamp(t)
	return &s
}

// indicator is the page's overall state: the worst component state with data, or the worst
// impact of an open incident, whichever is worse.
func indicator(st *statusv1.GetStatusResponse) Indicator {
	level, measured := 0, false
	for _, c := range st.GetComponents() {
		if c.GetState() != "no_data" {
			measured = true
		}
		level = max(level, severity(c.GetState()))
	}
	for _, in := range st.GetIncidents() {
		if in.GetKind() == "incident" && in.GetResolveTime() == nil {
			measured = true
			level = max(level, impactLevel(in.GetImpact()))
		}
	}
	if !measured {
		return Indicator{Indicator: "none", Description: "No data: nothing was measured in the last 30 minutes"}
	}
	return []Indicator{
		{"none", "All Systems Operational"},
		{"minor", "Minor Service Outage"},
		{"major", "Partial System Outage"},
		{"critical", "Major Service Outage"},
	}[level]
}

func severity(state string) int {
	switch state {
	case "degraded_performance":
		return 1
	case "partial_outage":
		return 2
	case "major_outage":
		return 3
	}
	return 0
}

func impactLevel(impact string) int {
	switch impact {
	case "minor":
		return 1
	case "major":
		return 2
	case "critical":
		return 3
	}
	return 0
}

func float(v interface{ GetValue() float64 }, ok bool) *float64 {
	if !ok {
		return nil
	}
	f := v.GetValue()
	return &f
}

// summary builds summary.json from the core's status.
func summary(st *statusv1.GetStatusResponse, baseURL string) Summary {
	updated := stamp(st.GetGenerateTime())
	out := Summary{
		Page:                  Page{ID: PageID, Name: "Model gateway", URL: baseURL + "/status", TimeZone: "Etc/UTC", UpdatedAt: updated},
		Status:                indicator(st),
		Components:            []Component{},
		Incidents:             []Incident{},
		ScheduledMaintenances: []Maintenance{},
	}
	for i, c := range st.GetComponents() {
		out.Components = append(out.Components, Component{
			ID: c.GetId(), Name: c.GetName(), Status: statuspageStatus(c.GetState()), Description: c.GetDescription(), Position: i + 1,
			UpdatedAt: updated, PageID: PageID, Showcase: true,
			Metrics: Metrics{
				WindowMinutes: st.GetWindowMinutes(), Requests: c.GetRequests(), Failures: c.GetFailures(),
				SuccessRatio: float(c.GetSuccessRatio(), c.SuccessRatio != nil),
				P50Ms:        float(c.GetP50Ms(), c.P50Ms != nil), P95Ms: float(c.GetP95Ms(), c.P95Ms != nil),
				LastReportTime: optStamp(c.GetLastReportTime()),
			},
		})
	}
	// summary.json lists what is still open.
	out.Incidents, out.ScheduledMaintenances = incidents(st, baseURL, false)
	return out
}

// Models is GET /status/models.json.
type Models struct {
	Models []Model `json:"models"`
}

// Model is one public active model.
type Model struct {
	ID               string     `json:"id"`
	DisplayName      string     `json:"display_name"`
	Family           string     `json:"family"`
	EndpointFamilies []Endpoint `json:"endpoint_families"`
}

// Endpoint is one (model, endpoint family) cell of the matrix. OptionalParameters is null
// when no capability entry exists (unknown, passed through) and [] when the absence of every
// optional parameter was verified (spec 2.3).
type Endpoint struct {
	EndpointFamily     string    `json:"endpoint_family"`
	Status             string    `json:"status"`
	Requests           int64     `json:"requests"`
	Failures           int64     `json:"failures"`
	OptionalParameters *[]string `json:"optional_parameters"`
	VerifiedAt         *string   `json:"verified_at"`
	LastSuccessAt      *string   `json:"last_success_at"`
}

func models(st *statusv1.GetStatusResponse) Models {
	out := Models{Models: []Model{}}
	for _, m := range st.GetModels() {
		mm := Model{ID: m.GetId(), DisplayName: m.GetDisplayName(), Family: m.GetFamily(), EndpointFamilies: []Endpoint{}}
		for _, e := range m.GetEndpointFamilies() {
			ep := Endpoint{EndpointFamily: e.GetEndpointFamily(), Status: e.GetState(), Requests: e.GetRequests(), Failures: e.GetFailures(),
				LastSuccessAt: optStamp(e.GetLastSuccessTime())}
			if e.GetVerified() {
				params := append([]string{}, e.GetOptionalParameters()...)
				ep.OptionalParameters, ep.VerifiedAt = &params, optStamp(e.GetVerifyTime())
			}
			mm.EndpointFamilies = append(mm.EndpointFamilies, ep)
		}
		out.Models = append(out.Models, mm)
	}
	return out
}
