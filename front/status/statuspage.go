package status

import (
	"net/http"

	statusv1 "modelgateway/gen/gateway/status/v1"
)

// The other Statuspage v2 shapes (contract.md, "more public paths"): each is the page plus
// one part of summary.json, so a Statuspage client reads whichever it polls. incidents.json
// and scheduled-maintenances.json also list what was resolved in the days the page shows
// (core keeps 7), in core's order.

// StatusDoc is GET /status/api/v2/status.json.
type StatusDoc struct {
	Page   Page      `json:"page"`
	Status Indicator `json:"status"`
}

// ComponentsDoc is GET /status/api/v2/components.json.
type ComponentsDoc struct {
	Page       Page        `json:"page"`
	Components []Component `json:"components"`
}

// IncidentsDoc is GET /status/api/v2/incidents.json.
type IncidentsDoc struct {
	Page      Page       `json:"page"`
	Incidents []Incident `json:"incidents"`
}

// MaintenancesDoc is GET /status/api/v2/scheduled-maintenances.json.
type MaintenancesDoc struct {
	Page                  Page          `json:"page"`
	ScheduledMaintenances []Maintenance `json:"scheduled_maintenances"`
}

// statuspageStatus is a component state in Statuspage's words: no data is operational (its
// metrics say zero requests); no Statuspage client accepts another value.
func statuspageStatus(state string) string {
	switch state {
	case "operational", "degraded_performance", "partial_outage", "major_outage":
		return state
	}
	return "operational"
}

// incident is one incident or maintenance in Statuspage's shape, resolved or not.
func incident(in *statusv1.Incident, names map[string]string, baseURL string) Incident {
	inc := Incident{
		ID: in.GetId(), Name: in.GetTitle(), Status: in.GetStatus(), Impact: in.GetImpact(),
		CreatedAt: stamp(in.GetCreateTime()), UpdatedAt: stamp(in.GetUpdateTime()), StartedAt: stamp(in.GetCreateTime()),
		ResolvedAt: optStamp(in.GetResolveTime()),
		Shortlink:  baseURL + "/status#incident-" + in.GetId(), PageID: PageID,
		IncidentUpdates: []IncidentUpdate{}, Components: []Ref{},
	}
	for _, u := range in.GetUpdates() {
		at := stamp(u.GetCreateTime())
		inc.IncidentUpdates = append(inc.IncidentUpdates, IncidentUpdate{ID: u.GetId(), IncidentID: in.GetId(), Status: u.GetStatus(), Body: u.GetBody(), CreatedAt: at, UpdatedAt: at, DisplayAt: at})
	}
	for _, c := range in.GetComponents() {
		inc.Components = append(inc.Components, Ref{ID: c, Name: names[c]})
	}
	return inc
}

func maintenance(in *statusv1.Incident, inc Incident) Maintenance {
	return Maintenance{Incident: inc, ScheduledFor: optStamp(in.GetScheduledFor()), ScheduledUntil: optStamp(in.GetScheduledUntil())}
}

// incidents splits st's incidents into incidents and maintenances, the resolved ones only
// when withResolved.
func incidents(st *statusv1.GetStatusResponse, baseURL string, withResolved bool) ([]Incident, []Maintenance) {
	names := map[string]string{}
	for _, c := range st.GetComponents() {
		names[c.GetId()] = c.GetName()
	}
	incs, mnts := []Incident{}, []Maintenance{}
	for _, in := range st.GetIncidents() {
		if in.GetResolveTime() != nil && !withResolved {
			continue
		}
		inc := incident(in, names, baseURL)
		if in.GetKind() == "maintenance" {
			mnts = append(mnts, maintenance(in, inc))
			continue
		}
		incs = append(incs, inc)
	}
	return incs, mnts
}

// statuspage serves one of the Statuspage v2 documents, built by doc from the core's status.
func (h *Handler) statuspage(doc func(Summary, *statusv1.GetStatusResponse) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st, err := h.status(r)
		if err != nil {
			h.unavailable(w, err)
			return
		}
		h.json(w, doc(summary(st, h.cfg.BaseURL), st))
	}
}

func (h *Handler) statusDoc(s Summary, _ *statusv1.GetStatusResponse) any {
	return StatusDoc{Page: s.Page, Status: s.Status}
}

func (h *Handler) componentsDoc(s Summary, _ *statusv1.GetStatusResponse) any {
	return ComponentsDoc{Page: s.Page, Components: s.Components}
}

func (h *Handler) incidentsDoc(s Summary, st *statusv1.GetStatusResponse) any {
	incs, _ := incidents(st, h.cfg.BaseURL, true)
	return IncidentsDoc{Page: s.Page, Incidents: incs}
}

func (h *Handler) maintenancesDoc(s Summary, st *statusv1.GetStatusResponse) any {
	_, mnts := incidents(st, h.cfg.BaseURL, true)
	return MaintenancesDoc{Page: s.Page, ScheduledMaintenances: mnts}
}
