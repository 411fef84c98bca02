package statusdata

import (
	"context"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	statusv1 "modelgateway/gen/gateway/status/v1"

	"modelgateway/core/catalog"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// BotHeartbeat answers when the chat bot's last health report arrived (zero time: never).
//
// This is the seam to the chat bot's ReportBotHealth admin RPC: until it is wired, Reader's
// BotHeartbeat is nil and the chat bot component shows no data.
type BotHeartbeat func(ctx context.Context) (time.Time, error)

// Reader reads the shared numbers back as the status page.
type Reader struct {
	Store     *store.Store
	Snapshots func() *snapshot.Snapshot
	// BotHeartbeat is nil until the chat bot reports its health (see the type).
	BotHeartbeat BotHeartbeat
	Now          func() time.Time
	// SetAside counts the model's routes for a family that this replica has set aside; nil:
	// none are.
	SetAside func(m *snapshot.Model, family string) int
}

// ResolvedShownFor is how long a resolved incident stays on the page.
const ResolvedShownFor = 7 * 24 * time.Hour

// Status is the whole page: components with their numbers and history, incidents, models.
func (r *Reader) Status(ctx context.Context) (*statusv1.GetStatusResponse, error) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	now = now.UTC()
	since := now.Add(-Window)
	minutes, err := r.Store.StatusMinutes(ctx, since)
	if err != nil {
		return nil, err
	}
	today := now.Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -(HistoryDays - 1))
	days, err := r.Store.StatusDays(ctx, first)
	if err != nil {
		return nil, err
	}
	incidents, err := r.Store.ListIncidents(ctx, now.Add(-ResolvedShownFor))
	if err != nil {
		return nil, err
	}
	models, err := r.Store.ModelStatuses(ctx, since)
	if err != nil {
		return nil, err
	}
	out := &statusv1.GetStatusResponse{GenerateTime: timestamppb.New(now), WindowMinutes: int32(Window / time.Minute)}

	type sums struct {
		ok, failed int64
		hist       []int64
		minutes    []store.StatusMinute
	}
	live := map[string]*sums{}
	for _, m := range minutes {
		s := live[m.Component]
		if s == nil {
			s = &sums{hist: make([]int64, len(LatencyBounds)+1)}
			live[m.Component] = s
		}
		s.ok, s.failed, s.minutes = s.ok+m.OK, s.failed+m.Failed, append(s.minutes, m)
		for i, n := range m.Latency {
			if i < len(s.hist) {
				s.hist[i] += n
			}
		}
	}
	daily := map[string]map[string]store.StatusDay{}
	for _, d := range days {
		if daily[d.Component] == nil {
			daily[d.Component] = map[string]store.StatusDay{}
		}
		daily[d.Component][d.Day.Format(time.DateOnly)] = d
	}
	for _, c := range Components {
		pc := &statusv1.Component{Id: c.ID, Name: c.Name, Description: c.Description, State: NoData}
		if s := live[c.ID]; s != nil {
			pc.Requests, pc.Failures = s.ok+s.failed, s.failed
			pc.State = ComponentState(s.ok, s.failed, FailuresInARow(s.minutes))
			if pc.Requests > 0 {
				pc.SuccessRatio = wrapperspb.Double(float64(s.ok) / float64(pc.Requests))
				pc.P50Ms, pc.P95Ms = ms(Quantile(s.hist, 0.5)), ms(Quantile(s.hist, 0.95))
			}
		}
		if c.ID == ChatBot {
			if err := r.botState(ctx, now, pc); err != nil {
				return nil, err
			}
		}
		for d := first; !d.After(today); d = d.AddDate(0, 0, 1) {
			key := d.Format(time.DateOnly)
			day := &statusv1.Day{Date: key, State: NoData}
			if v, ok := daily[c.ID][key]; ok {
				// A day without a success failed every request in a row.
				run := int64(0)
				if v.OK == 0 {
					run = v.Failed
				}
				day.Requests, day.Failures, day.State = v.OK+v.Failed, v.Failed, ComponentState(v.OK, v.Failed, run)
			}
			pc.History = append(pc.History, day)
		}
		out.Components = append(out.Components, pc)
	}
	for _, in := range incidents {
		out.Incidents = append(out.Incidents, incidentProto(in))
	}
	out.Models = modelMatrix(r.Snapshots(), models, r.SetAside)
	return out, nil
}

// botState: operational while reports arrive, a major outage once none came for BotSilence,
// no data before the first report (or while nothing is wired to report).
func (r *Reader) botState(ctx context.Context, now time.Time, pc *statusv1.Component) error {
	pc.State = NoData
	if r.BotHeartbeat == nil {
		return nil
	}
	last, err := r.BotHeartbeat(ctx)
	if err != nil || last.IsZero() {
		return err
	}
	pc.LastReportTime = timestamppb.New(last)
	pc.State = Operational
	if now.Sub(last) > BotSilence {
		pc.State = MajorOutage
	}
	return nil
}

func ms(v float64) *wrapperspb.DoubleValue {
	if math.IsNaN(v) {
		return nil
	}
	return wrapperspb.Double(v)
}

func ts(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

func incidentProto(in *store.Incident) *statusv1.Incident {
	out := &statusv1.Incident{
		Id: in.ID.String(), Kind: in.Kind, Title: in.Title, Status: in.Status, Impact: in.Impact,
		Components: append([]string{}, in.Components...), CreateTime: timestamppb.New(in.CreateTime),
		UpdateTime: timestamppb.New(in.UpdateTime), ResolveTime: ts(in.ResolveTime),
		ScheduledFor: ts(in.ScheduledFor), ScheduledUntil: ts(in.ScheduledUntil),
	}
	for _, u := range in.Updates {
		out.Updates = append(out.Updates, &statusv1.IncidentUpdate{Id: u.ID.String(), Status: u.Status, Body: u.Body, CreateTime: timestamppb.New(u.CreateTime)})
	}
	return out
}

// PublicFamilies are the endpoint families a model is both served and priced on, in contract
// order: what the public catalogue lists for it (count-token families need no price).
func PublicFamilies(m *snapshot.Model) []string {
	priced := map[string]bool{}
	for _, p := range m.Prices {
		for _, f := range p.EndpointFamilies {
			priced[f] = true
		}
	}
	var out []string
	for _, f := range m.EndpointFamilies(catalog.EndpointFamilies) {
		if priced[f] {
			out = append(out, f)
		}
	}
	return out
}

// routeCount is how many of the model's routes serve the family.
func routeCount(m *snapshot.Model, family string) int {
	n := 0
	for i := range m.Routes {
		if slices.Contains(m.Routes[i].EndpointFamilies, family) {
			n++
		}
	}
	return n
}

// modelMatrix is every public active model × its endpoint families.
// Each cell counts the routes serving it and those set aside (route health).
func modelMatrix(snap *snapshot.Snapshot, stats []store.ModelStatus, setAside func(*snapshot.Model, string) int) []*statusv1.ModelStatus {
	type pair struct{ model, family string }
	byPair := map[pair]store.ModelStatus{}
	for _, s := range stats {
		byPair[pair{s.Model, s.EndpointFamily}] = s
	}
	out := []*statusv1.ModelStatus{}
	if snap == nil {
		return out
	}
	for _, m := range snap.ActiveModels() {
		families := PublicFamilies(m)
		if len(families) == 0 {
			continue
		}
		ms := &statusv1.ModelStatus{Id: m.ID, DisplayName: m.DisplayName, Family: m.Family}
		for _, f := range families {
			s := byPair[pair{m.ID, f}]
			e := &statusv1.EndpointStatus{EndpointFamily: f, State: State(s.OK, s.Failed), Requests: s.OK + s.Failed, Failures: s.Failed,
				Routes: int32(routeCount(m, f))}
			if setAside != nil {
				e.RoutesSetAside = int32(setAside(m, f))
			}
			if !s.LastSuccess.IsZero() {
				e.LastSuccessTime = timestamppb.New(s.LastSuccess)
			}
			if c, ok := m.Capabilities[f]; ok {
				e.Verified = true
				e.OptionalParameters = slices.Clone(c.OptionalParameters)
				if e.OptionalParameters == nil {
					e.OptionalParameters = []string{}
				}
				e.VerifyTime = timestamppb.New(c.VerifiedAt)
			}
			ms.EndpointFamilies = append(ms.EndpointFamilies, e)
		}
		out = append(out, ms)
	}
	return out
}
