package admin

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/apierror"
)

func TestIncidentRequestsAreChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	s := &Server{Store: st}
	at := func(h int) *timestamppb.Timestamp {
		return timestamppb.New(time.Date(2026, 12, 1, h, 0, 0, 0, time.UTC))
	}
	for _, tc := range []struct {
		name string
		req  *adminv1.CreateIncidentRequest
		ok   bool
	}{
		{"an incident with defaults", &adminv1.CreateIncidentRequest{Title: "Slow", Body: "Looking."}, true},
		{"a maintenance with its window", &adminv1.CreateIncidentRequest{Kind: "maintenance", Title: "Upgrade", Body: "Planned.", ScheduledFor: at(1), ScheduledUntil: at(2)}, true},
		{"a maintenance without a window", &adminv1.CreateIncidentRequest{Kind: "maintenance", Title: "Upgrade", Body: "Planned."}, false},
		{"a window that ends before it starts", &adminv1.CreateIncidentRequest{Kind: "maintenance", Title: "Upgrade", Body: "Planned.", ScheduledFor: at(2), ScheduledUntil: at(1)}, false},
		{"no title", &adminv1.CreateIncidentRequest{Body: "Looking."}, false},
		{"no text", &adminv1.CreateIncidentRequest{Title: "Slow"}, false},
		{"an incident born resolved", &adminv1.CreateIncidentRequest{Title: "Slow", Body: "x", Status: "resolved"}, false},
		{"a maintenance status on an incident", &adminv1.CreateIncidentRequest{Title: "Slow", Body: "x", Status: "scheduled"}, false},
		{"an unknown impact", &adminv1.CreateIncidentRequest{Title: "Slow", Body: "x", Impact: "huge"}, false},
		{"an unknown kind", &adminv1.CreateIncidentRequest{Kind: "outage", Title: "Slow", Body: "x"}, false},
	} {
		got, err := s.CreateIncident(ctx, tc.req)
		if tc.ok {
			if err != nil || got.GetUpdates()[0].GetBody() == "" {
				t.Errorf("%s: %v %v", tc.name, got, err)
			}
			continue
		}
		if ae, isAPI := err.(*apierror.Error); !isAPI || ae.Code != apierror.InvalidRequest {
			t.Errorf("%s: %v, want invalid_request_error", tc.name, err)
		}
	}
	list, err := s.ListIncidents(ctx, &adminv1.ListIncidentsRequest{})
	if err != nil || len(list.GetIncidents()) != 2 {
		t.Fatalf("after two good requests: %v %v", list, err)
	}
	mnt := list.GetIncidents()[0]
	if mnt.GetKind() != "maintenance" || mnt.GetStatus() != "scheduled" || mnt.GetImpact() != "none" {
		t.Errorf("maintenance defaults: %v", mnt)
	}
	if _, err := s.UpdateIncident(ctx, &adminv1.UpdateIncidentRequest{Id: mnt.GetId(), Status: "investigating", Body: "x"}); err == nil {
		t.Error("an incident status on a maintenance was accepted")
	}
	done, err := s.ResolveIncident(ctx, &adminv1.ResolveIncidentRequest{Id: mnt.GetId(), Body: "Done."})
	if err != nil || done.GetStatus() != "completed" || done.GetResolveTime() == nil || len(done.GetUpdates()) != 2 {
		t.Errorf("resolved maintenance: %v %v", done, err)
	}
	if _, err := s.ResolveIncident(ctx, &adminv1.ResolveIncidentRequest{Id: "01a20fc7-eb05-7a00-b6ac-9ba82bd19b06", Body: "x"}); err == nil {
		t.Error("resolving an unknown incident succeeded")
	}
	if list, _ := s.ListIncidents(ctx, &adminv1.ListIncidentsRequest{}); len(list.GetIncidents()) != 1 {
		t.Errorf("open after resolving one: %d, want 1", len(list.GetIncidents()))
	}
}
