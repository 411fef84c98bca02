package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"
)

// gateway is the bot's only way into the service: the generated admin and catalogue clients
// over gRPC, every call carrying the admin token.
type gateway struct {
	conn    *grpc.ClientConn
	admin   adminv1.AdminServiceClient
	catalog catalogv1.CatalogServiceClient
}

// callTimeout bounds one admin call, so an unreachable gateway is noticed and reported to the
// user instead of hanging the update.
const callTimeout = 10 * time.Second

func dialGateway(addr, token string) (*gateway, error) {
	auth := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	// A restarted gateway is found again within seconds, not after gRPC's default 2 minutes.
	reconnect := grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 500 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second}, MinConnectTimeout: 5 * time.Second}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(auth), grpc.WithConnectParams(reconnect))
	if err != nil {
		return nil, fmt.Errorf("gateway client for %s: %w", addr, err)
	}
	return &gateway{conn: conn, admin: adminv1.NewAdminServiceClient(conn), catalog: catalogv1.NewCatalogServiceClient(conn)}, nil
}

// unavailable tells a gateway that cannot be reached (the update is kept and retried) from an
// answer (the user is told what it means).
func unavailable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// definitive tells a gateway answer that refuses a call for good (the same call would be
// refused again whatever is retried) from every other failure: unreachable, timed out,
// internal, rate limited, an error from the network or the transport. Money is moved only
// through calls retried until they are answered, so only these answers end the retries.
func definitive(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.FailedPrecondition, codes.OutOfRange:
		return true
	}
	return false
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// Names of the bot's state values (letters, digits, '.', '_', '-' only).
const (
	stateOffset   = "offset" // read only: see stateHandled
	prefixSession = "s."     // s.<update id>: a key being created or edited with keyboards
	prefixDelete  = "del."   // del.<chat>.<message>: a secret message to delete at a time
	prefixPayment = "pay."   // pay.<sha256 of the charge id>: a Telegram payment, kept for good
)

// offset is the last handled update id as earlier versions kept it; 0 before the first.
func (g *gateway) offset(ctx context.Context) (int64, error) {
	st, err := g.admin.GetBotState(ctx, &adminv1.GetBotStateRequest{Key: stateOffset})
	if isNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(st.GetValue(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stored offset %q: %w", st.GetValue(), err)
	}
	return n, nil
}

// put stores a JSON value until expire.
func (g *gateway) put(ctx context.Context, key string, v any, expire time.Time) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = g.admin.PutBotState(ctx, &adminv1.PutBotStateRequest{Key: key, Value: string(raw), ExpireTime: timestamppb.New(expire)})
	return err
}

// errGone is a state value that is not there (taken, expired, never written).
var errGone = errors.New("no such state")

// get reads a JSON value.
func (g *gateway) get(ctx context.Context, key string, v any) error {
	st, err := g.admin.GetBotState(ctx, &adminv1.GetBotStateRequest{Key: key})
	if isNotFound(err) {
		return errGone
	}
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(st.GetValue()), v)
}

// take removes a JSON value and returns it: only one caller ever gets it.
func (g *gateway) take(ctx context.Context, key string, v any) error {
	st, err := g.admin.TakeBotState(ctx, &adminv1.TakeBotStateRequest{Key: key})
	if isNotFound(err) {
		return errGone
	}
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(st.GetValue()), v)
}

// profile finds the Telegram user's profile, creating it on first contact.
func (g *gateway) profile(ctx context.Context, userID int64, displayName string) (*adminv1.Profile, error) {
	ref := externalRef(userID)
	p, err := g.admin.LookupProfile(ctx, &adminv1.LookupProfileRequest{ExternalRef: ref})
	if !isNotFound(err) {
		return p, err
	}
	p, err = g.admin.CreateProfile(ctx, &adminv1.CreateProfileRequest{DisplayName: displayName, ExternalRef: ref})
	if status.Code(err) == codes.AlreadyExists {
		// Created by a concurrent update of the same user.
		return g.admin.LookupProfile(ctx, &adminv1.LookupProfileRequest{ExternalRef: ref})
	}
	return p, err
}

func externalRef(userID int64) string { return "tg:" + strconv.FormatInt(userID, 10) }

// ownKey returns the key with that id when it belongs to the profile; callback data names
// keys, and callback data is whatever the client sent.
func (g *gateway) ownKey(ctx context.Context, profileID, keyID string) (*adminv1.Key, error) {
	ks, err := g.admin.ListKeys(ctx, &adminv1.ListKeysRequest{ProfileId: profileID})
	if err != nil {
		return nil, err
	}
	for _, k := range ks.GetKeys() {
		if k.GetId() == keyID {
			return k, nil
		}
	}
	return nil, nil
}
