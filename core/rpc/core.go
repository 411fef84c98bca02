package rpc

import (
	"context"
	"strconv"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
)

// Content-generation endpoint families and the methods each enables in the v1beta model form.
var contentMethods = []struct {
	family  string
	methods []string
}{
	{"content.generate", []string{"generateContent", "streamGenerateContent"}},
	{"content.count_tokens", []string{"countTokens"}},
	{"content.embed", []string{"embedContent", "batchEmbedContents"}},
}

var contentFamilies = []string{"content.generate", "content.count_tokens", "content.embed"}

// CoreServer implements CoreService: model discovery and the balance from the in-memory
// snapshot, token counts, and the priced RPCs (Generate, Embed, Forward, Realtime), which
// check the key, route to an upstream, price, hold and charge.
type CoreServer struct {
	corev1.UnimplementedCoreServiceServer
	Snapshots *snapshot.Holder
	Store     *store.Store
	Deps      *Deps

	sessions sessionCount
	holds    memoHolds // smallest holds of the current snapshot (prebody.go)
}

// caller authenticates the request's key against the current snapshot.
// authenticated is a caller's key found already, and the snapshot it was found in; zero:
// none (the RPC authenticates the caller itself).
type authenticated struct {
	snap *snapshot.Snapshot
	k    *snapshot.Key
}

func (s *CoreServer) caller(ctx context.Context) (*snapshot.Snapshot, *snapshot.Key, error) {
	snap := s.Snapshots.Current()
	k, err := authenticate(snap, callmd.Bearer(ctx))
	if err != nil {
		return nil, nil, err
	}
	return snap, k, nil
}

// pathModel undoes grpc-gateway's rendering of the {model=*/**} template, which appends "/"
// when the "**" part is empty; the template needs the leading "*" so that the bare list path
// does not match the single-model route.
func pathModel(s string) string { return strings.TrimSuffix(s, "/") }

// ListModels implements GET /v1/models.
func (s *CoreServer) ListModels(ctx context.Context, _ *corev1.ListModelsRequest) (*corev1.ListModelsResponse, error) {
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	resp := &corev1.ListModelsResponse{Object: "list", Data: []*corev1.Model{}}
	for _, m := range snap.VisibleModels(k) {
		resp.Data = append(resp.Data, modelObject(m))
	}
	return pageFields(resp), nil
}

// GetModel implements GET /v1/models/{model}.
func (s *CoreServer) GetModel(ctx context.Context, req *corev1.GetModelRequest) (*corev1.Model, error) {
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	m, apiErr := snap.VisibleModel(k, pathModel(req.GetModel()))
	if apiErr != nil {
		return nil, apiErr
	}
	return modelObject(m), nil
}

// GetBalance implements GET /v1/balance: the profile's ledger balance.
func (s *CoreServer) GetBalance(ctx context.Context, _ *corev1.GetBalanceRequest) (*corev1.Balance, error) {
	_, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.Deps.Ledger.DBTimeout)
	defer cancel()
	p, err := s.Store.GetProfile(ctx, k.ProfileID)
	if err != nil {
		return nil, unavailable(ctx, "read balance", err)
	}
	// Replicas reserve slices of the balance for requests in flight; what they reserved is not
	// available to a new request elsewhere (contract: insufficient_balance).
	leased, err := s.Store.Leased(ctx, k.ProfileID)
	if err != nil {
		return nil, unavailable(ctx, "read leases", err)
	}
	return &corev1.Balance{
		Object: "balance", ProfileId: p.ID.String(), Currency: p.Currency,
		Balance: p.Balance.String(), Available: p.Balance.Sub(leased).String(),
	}, nil
}

func (s *CoreServer) generativeModel(k *snapshot.Key, m *snapshot.Model) *corev1.GenerativeModel {
	g := &corev1.GenerativeModel{Name: "models/" + m.ID, BaseModelId: m.ID, DisplayName: m.DisplayName, SupportedGenerationMethods: []string{}}
	if g.DisplayName == "" {
		g.DisplayName = m.ID
	}
	for _, cm := range contentMethods {
		if !k.AllowsEndpoint(cm.family) || !m.Serves(cm.family) {
			continue
		}
		for _, method := range cm.methods {
			if method == "streamGenerateContent" && !m.Streaming {
				continue
			}
			g.SupportedGenerationMethods = append(g.SupportedGenerationMethods, method)
		}
	}
	g.OutputTokenLimit = m.OutputTokenLimit
	return g
}

// ListGenerativeModels implements GET /v1beta/models with pageSize/pageToken paging.
func (s *CoreServer) ListGenerativeModels(ctx context.Context, req *corev1.ListGenerativeModelsRequest) (*corev1.ListGenerativeModelsResponse, error) {
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	models := snap.VisibleModels(k, contentFamilies...)
	size := int(req.GetPageSize())
	switch {
	case size <= 0:
		size = 50
	case size > 1000:
		size = 1000
	}
	start := 0
	if tok := req.GetPageToken(); tok != "" {
		start, err = strconv.Atoi(tok)
		if err != nil || start < 0 || start > len(models) {
			return nil, apierror.New(apierror.InvalidRequest, "pageToken is not valid")
		}
	}
	end := min(start+size, len(models))
	resp := &corev1.ListGenerativeModelsResponse{Models: []*corev1.GenerativeModel{}}
	for _, m := range models[start:end] {
		resp.Models = append(resp.Models, s.generativeModel(k, m))
	}
	if end < len(models) {
		resp.NextPageToken = strconv.Itoa(end)
	}
	return resp, nil
}

// GetGenerativeModel implements GET /v1beta/models/{model}; "models/" in front of the id is
// accepted because that is the form the list returns.
func (s *CoreServer) GetGenerativeModel(ctx context.Context, req *corev1.GetGenerativeModelRequest) (*corev1.GenerativeModel, error) {
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	m, apiErr := snap.VisibleModel(k, strings.TrimPrefix(pathModel(req.GetModel()), "models/"), contentFamilies...)
	if apiErr != nil {
		return nil, apiErr
	}
	return s.generativeModel(k, m), nil
}

// ListCompatModels implements GET /v1beta/chat-compat/models: content-generation models in
// the chat-completions list form.
func (s *CoreServer) ListCompatModels(ctx context.Context, _ *corev1.ListCompatModelsRequest) (*corev1.ListModelsResponse, error) {
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	resp := &corev1.ListModelsResponse{Object: "list", Data: []*corev1.Model{}}
	for _, m := range snap.VisibleModels(k, contentFamilies...) {
		resp.Data = append(resp.Data, modelObject(m))
	}
	return pageFields(resp), nil
}

// Authorize checks key, endpoint family and model for a request before anything goes upstream.
func (s *CoreServer) Authorize(ctx context.Context, req *corev1.AuthorizeRequest) (*corev1.AuthorizeResponse, error) {
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	m, apiErr := snap.Authorize(k, req.GetEndpointFamily(), req.GetModel())
	if apiErr != nil {
		return nil, apiErr
	}
	if req.GetCheckBalance() {
		if err := s.checkBalance(ctx, snap, k, req.GetEndpointFamily(), m); err != nil {
			return nil, err
		}
	}
	if req.GetTakeRequestId() {
		if err := s.takeRequestID(ctx); err != nil {
			return nil, err
		}
	}
	return &corev1.AuthorizeResponse{KeyId: k.IDText(), ProfileId: k.ProfileText(), RequestId: RequestID(ctx)}, nil
}
