package admin

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Bot health states; the status site maps them onto its component states.
const (
	BotOperational = "operational"
	BotMajorOutage = "major_outage"
	BotNoData      = "no_data"
)

// BotHealthWindow is how long a report keeps the bot operational (contract.md: major_outage
// when none came for 2 minutes).
const BotHealthWindow = 2 * time.Minute

// validBotKey: 1 to 200 letters, digits, '.', '_' or '-', so that keys fit a URL path segment
// unescaped and the HTTP mapping /admin/v1/bot/state/{key} holds. A loop, not a regexp: the
// pattern's {1,200} compiled to a program of 200 states at init, 190 KB of heap that every
// process of the binary kept for its life.
func validBotKey(key string) bool {
	if len(key) == 0 || len(key) > 200 {
		return false
	}
	for i := range len(key) {
		if c := key[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// Values stay small: they are bookkeeping, not storage.
const maxBotValue = 16 << 10

func checkBotKey(key string) error {
	if !validBotKey(key) {
		return apierror.New(apierror.InvalidRequest, "key: %q must be 1 to 200 letters, digits, '.', '_' or '-'", key)
	}
	return nil
}

func botStateProto(b *store.BotState) *adminv1.BotState {
	out := &adminv1.BotState{Key: b.Key, Value: b.Value, UpdateTime: timestamppb.New(b.UpdateTime)}
	if b.ExpireTime != nil {
		out.ExpireTime = timestamppb.New(*b.ExpireTime)
	}
	return out
}

// GetBotState implements GET /admin/v1/bot/state/{key}.
func (s *Server) GetBotState(ctx context.Context, req *adminv1.GetBotStateRequest) (*adminv1.BotState, error) {
	if err := checkBotKey(req.GetKey()); err != nil {
		return nil, err
	}
	b, err := s.Store.GetBotState(ctx, req.GetKey())
	if err != nil {
		return nil, storeError("bot state "+req.GetKey(), err)
	}
	return botStateProto(b), nil
}

// PutBotState implements POST /admin/v1/bot/state/{key}:put.
func (s *Server) PutBotState(ctx context.Context, req *adminv1.PutBotStateRequest) (*adminv1.PutBotStateResponse, error) {
	if err := checkBotKey(req.GetKey()); err != nil {
		return nil, err
	}
	if len(req.GetValue()) > maxBotValue {
		return nil, apierror.New(apierror.InvalidRequest, "value: longer than %d bytes", maxBotValue)
	}
	var expire *time.Time
	if req.GetExpireTime() != nil {
		t := req.GetExpireTime().AsTime()
		expire = &t
	}
	b, created, err := s.Store.PutBotState(ctx, req.GetKey(), req.GetValue(), expire, req.GetOnlyIfAbsent())
	if err != nil {
		return nil, err
	}
	return &adminv1.PutBotStateResponse{State: botStateProto(b), Created: created}, nil
}

// TakeBotState implements POST /admin/v1/bot/state/{key}:take.
func (s *Server) TakeBotState(ctx context.Context, req *adminv1.TakeBotStateRequest) (*adminv1.BotState, error) {
	if err := checkBotKey(req.GetKey()); err != nil {
		return nil, err
	}
	b, err := s.Store.TakeBotState(ctx, req.GetKey())
	if err != nil {
		return nil, storeError("bot state "+req.GetKey(), err)
	}
	return botStateProto(b), nil
}

// ListBotState implements GET /admin/v1/bot/state.
func (s *Server) ListBotState(ctx context.Context, req *adminv1.ListBotStateRequest) (*adminv1.ListBotStateResponse, error) {
	bs, err := s.Store.ListBotState(ctx, req.GetPrefix())
	if err != nil {
		return nil, err
	}
	out := &adminv1.ListBotStateResponse{States: []*adminv1.BotState{}}
	for _, b := range bs {
		out.States = append(out.States, botStateProto(b))
	}
	return out, nil
}

// ReportBotHealth implements POST /admin/v1/bot/health:report.
func (s *Server) ReportBotHealth(ctx context.Context, req *adminv1.ReportBotHealthRequest) (*adminv1.BotHealth, error) {
	var poll *time.Time
	if req.GetLastPollTime() != nil {
		t := req.GetLastPollTime().AsTime()
		poll = &t
	}
	h, err := s.Store.ReportBotHealth(ctx, poll)
	if err != nil {
		return nil, err
	}
	return botHealthProto(h, h.LastReportTime), nil
}

// GetBotHealth implements GET /admin/v1/bot/health. The age of the last report is measured on
// the database's clock, the one that stamped it.
func (s *Server) GetBotHealth(ctx context.Context, _ *adminv1.GetBotHealthRequest) (*adminv1.BotHealth, error) {
	h, now, err := s.Store.GetBotHealth(ctx)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return &adminv1.BotHealth{Status: BotNoData}, nil
		}
		return nil, err
	}
	return botHealthProto(h, now), nil
}

func botHealthProto(h *store.BotHealth, now time.Time) *adminv1.BotHealth {
	out := &adminv1.BotHealth{Status: BotOperational, LastReportTime: timestamppb.New(h.LastReportTime)}
	if now.Sub(h.LastReportTime) > BotHealthWindow {
		out.Status = BotMajorOutage
	}
	if h.LastPollTime != nil {
		out.LastPollTime = timestamppb.New(*h.LastPollTime)
	}
	return out
}
