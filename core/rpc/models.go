package rpc

import (
	"time"

	catalogv1 "modelgateway/gen/gateway/catalog/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/snapshot"
)

// modelObject is one entry of GET /v1/models: the spec's fields, the ones the Anthropic SDK's
// models.list() reads (type, display_name, created_at), and the explicit output limit as
// Anthropic's Models API (max_tokens) and OpenRouter (top_provider.max_completion_tokens) name
// it, so that clients such as opencode need not guess a max_tokens the model refuses.
func modelObject(m *snapshot.Model) *corev1.Model {
	mo := &corev1.Model{
		Id: m.ID, Object: "model", Created: uint32(m.CreateTime.Unix()), OwnedBy: m.OwnedBy,
		Type: "model", DisplayName: displayName(m), CreatedAt: m.CreateTime.UTC().Format(time.RFC3339),
		TopProvider: &corev1.TopProvider{},
	}
	if l := outputLimit32(m); l != nil {
		mo.MaxTokens, mo.TopProvider.MaxCompletionTokens = l, l
	}
	return mo
}

// catalogLimits sets the public catalogue's output-limit fields, named as on GET /v1/models.
func catalogLimits(cm *catalogv1.Model, m *snapshot.Model) {
	cm.TopProvider = &catalogv1.TopProvider{}
	if l := outputLimit32(m); l != nil {
		cm.MaxTokens, cm.TopProvider.MaxCompletionTokens = l, l
	}
}

func displayName(m *snapshot.Model) string {
	if m.DisplayName != "" {
		return m.DisplayName
	}
	return m.ID
}

func outputLimit32(m *snapshot.Model) *uint32 {
	if m.OutputTokenLimit == nil || *m.OutputTokenLimit <= 0 {
		return nil
	}
	l := uint32(*m.OutputTokenLimit)
	return &l
}

// pageFields adds the Anthropic SDK's page fields: the list is always complete.
func pageFields(resp *corev1.ListModelsResponse) *corev1.ListModelsResponse {
	resp.HasMore = false
	if n := len(resp.Data); n > 0 {
		first, last := resp.Data[0].GetId(), resp.Data[n-1].GetId()
		resp.FirstId, resp.LastId = &first, &last
	}
	return resp
}
