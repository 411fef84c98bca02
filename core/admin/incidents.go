package admin

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/statusdata"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Incident kinds, and the statuses and impacts of the Statuspage vocabulary.
var (
	incidentStatuses    = []string{"investigating", "identified", "monitoring", "resolved"}
	maintenanceStatuses = []string{"scheduled", "in_progress", "verifying", "completed"}
	impacts             = []string{"none", "minor", "major", "critical"}
)

// CreateIncident implements POST /admin/v1/incidents.
func (s *Server) CreateIncident(ctx context.Context, req *adminv1.CreateIncidentRequest) (*adminv1.Incident, error) {
	in := &store.Incident{Kind: req.GetKind(), Title: strings.TrimSpace(req.GetTitle()), Status: req.GetStatus(), Impact: req.GetImpact(), Components: req.GetComponents()}
	if in.Kind == "" {
		in.Kind = "incident"
	}
	statuses, status, impact := incidentStatuses, "investigating", "minor"
	switch in.Kind {
	case "incident":
	case "maintenance":
		statuses, status, impact = maintenanceStatuses, "scheduled", "none"
		if req.GetScheduledFor() == nil || req.GetScheduledUntil() == nil || !req.GetScheduledUntil().AsTime().After(req.GetScheduledFor().AsTime()) {
			return nil, apierror.New(apierror.InvalidRequest, "a maintenance needs scheduled_for and a later scheduled_until")
		}
		f, u := req.GetScheduledFor().AsTime(), req.GetScheduledUntil().AsTime()
		in.ScheduledFor, in.ScheduledUntil = &f, &u
	default:
		return nil, apierror.New(apierror.InvalidRequest, "kind: %q is not incident or maintenance", in.Kind)
	}
	if in.Status == "" {
		in.Status = status
	}
	if in.Impact == "" {
		in.Impact = impact
	}
	if err := checkIncident(in.Title, req.GetBody(), in.Status, in.Impact, statuses); err != nil {
		return nil, err
	}
	if in.Status == statuses[len(statuses)-1] {
		return nil, apierror.New(apierror.InvalidRequest, "status: a new %s cannot start %s", in.Kind, in.Status)
	}
	if in.Components == nil {
		in.Components = []string{}
	}
	for _, c := range in.Components {
		if !statusdata.IsComponent(c) {
			return nil, apierror.New(apierror.InvalidRequest, "components: %q is not a status component", c)
		}
	}
	out, err := s.Store.CreateIncident(ctx, in, req.GetBody())
	if err != nil {
		return nil, storeError("incident", err)
	}
	return incidentProto(out), nil
}

// UpdateIncident implements POST /admin/v1/incidents/{id}:update.
func (s *Server) UpdateIncident(ctx context.Context, req *adminv1.UpdateIncidentRequest) (*adminv1.Incident, error) {
	return s.updateIncident(ctx, req.GetId(), req.GetStatus(), req.GetBody(), req.GetImpact(), false)
}

// ResolveIncident implements POST /admin/v1/incidents/{id}:resolve.
func (s *Server) ResolveIncident(ctx context.Context, req *adminv1.ResolveIncidentRequest) (*adminv1.Incident, error) {
	return s.updateIncident(ctx, req.GetId(), "", req.GetBody(), "", true)
}

func (s *Server) updateIncident(ctx context.Context, rawID, status, body, impact string, resolve bool) (*adminv1.Incident, error) {
	id, err := parseID("id", rawID)
	if err != nil {
		return nil, err
	}
	cur, err := s.Store.GetIncident(ctx, id)
	if err != nil {
		return nil, storeError("incident", err)
	}
	statuses := incidentStatuses
	if cur.Kind == "maintenance" {
		statuses = maintenanceStatuses
	}
	final := statuses[len(statuses)-1]
	if resolve {
		status = final
	}
	if err := checkIncident(cur.Title, body, status, impact, statuses); err != nil {
		return nil, err
	}
	out, err := s.Store.UpdateIncident(ctx, id, status, body, impact, status == final)
	if err != nil {
		return nil, storeError("incident", err)
	}
	return incidentProto(out), nil
}

func checkIncident(title, body, status, impact string, statuses []string) error {
	switch {
	case title == "":
		return apierror.New(apierror.InvalidRequest, "title is required")
	case strings.TrimSpace(body) == "":
		return apierror.New(apierror.InvalidRequest, "body is required: every update says what happened")
	case !slices.Contains(statuses, status):
		return apierror.New(apierror.InvalidRequest, "status: %q is not one of %s", status, strings.Join(statuses, ", "))
	case impact != "" && !slices.Contains(impacts, impact):
		return apierror.New(apierror.InvalidRequest, "impact: %q is not one of %s", impact, strings.Join(impacts, ", "))
	}
	return nil
}

// ListIncidents implements GET /admin/v1/incidents.
func (s *Server) ListIncidents(ctx context.Context, req *adminv1.ListIncidentsRequest) (*adminv1.ListIncidentsResponse, error) {
	since := time.Time{}
	if req.GetIncludeResolved() {
		since = time.Unix(0, 0)
	}
	list, err := s.Store.ListIncidents(ctx, since)
	if err != nil {
		return nil, err
	}
	out := &adminv1.ListIncidentsResponse{Incidents: []*adminv1.Incident{}}
	for _, in := range list {
		out.Incidents = append(out.Incidents, incidentProto(in))
	}
	return out, nil
}

func incidentProto(in *store.Incident) *adminv1.Incident {
	tsp := func(t *time.Time) *timestamppb.Timestamp {
		if t == nil {
			return nil
		}
		return timestamppb.New(*t)
	}
	out := &adminv1.Incident{
		Id: in.ID.String(), Kind: in.Kind, Title: in.Title, Status: in.Status, Impact: in.Impact,
		Components: append([]string{}, in.Components...), CreateTime: timestamppb.New(in.CreateTime),
		UpdateTime: timestamppb.New(in.UpdateTime), ResolveTime: tsp(in.ResolveTime),
		ScheduledFor: tsp(in.ScheduledFor), ScheduledUntil: tsp(in.ScheduledUntil),
	}
	for _, u := range in.Updates {
		out.Updates = append(out.Updates, &adminv1.IncidentUpdate{Id: u.ID.String(), Status: u.Status, Body: u.Body, CreateTime: timestamppb.New(u.CreateTime)})
	}
	return out
}
