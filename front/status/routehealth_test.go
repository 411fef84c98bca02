package status

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	statusv1 "modelgateway/gen/gateway/status/v1"
)

// Route health: a cell whose routes are partly set aside says so beside its numbers; a cell
// with none set aside shows only its numbers.
func TestModelMatrixShowsRoutesSetAside(t *testing.T) {
	t.Parallel()
	resp := &statusv1.GetStatusResponse{GenerateTime: timestamppb.New(t0), WindowMinutes: 30, Models: []*statusv1.ModelStatus{
		{Id: "m-two", DisplayName: "Two routes", Family: "openai", EndpointFamilies: []*statusv1.EndpointStatus{
			{EndpointFamily: "chat.completions", State: "degraded", Requests: 10, Failures: 5, Routes: 2, RoutesSetAside: 1, LastSuccessTime: timestamppb.New(t0.Add(-time.Minute))},
			{EndpointFamily: "responses", State: "operational", Requests: 3, Routes: 2},
		}},
	}}
	_, body := get(t, server(t, resp).URL+"/status")
	page := string(body)
	if !strings.Contains(page, "5 of 10 failed; 1 of 2 routes set aside") {
		t.Errorf("the chat cell does not show its route set aside:\n%s", page)
	}
	if !strings.Contains(page, "0 of 3 failed") || strings.Count(page, "routes set aside") != 1 {
		t.Errorf("the responses cell, with no route set aside, must not mention it:\n%s", page)
	}
}
