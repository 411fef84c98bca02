package rpc

import (
	"testing"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// The parameter check of core's priced RPCs refuses what the family's verified list lacks
// (what core/admin's VerifyCapabilities records and reloads into the snapshot), and lets
// everything through for a family without a list: unknown is not unsupported.
func TestCheckParametersReadsTheVerifiedList(t *testing.T) {
	t.Parallel()
	m := &snapshot.Model{Model: store.Model{ID: "m"}, Capabilities: map[string]store.Capability{
		"chat.completions": {EndpointFamily: "chat.completions", OptionalParameters: []string{"temperature", "stream"}},
	}}
	for _, tc := range []struct {
		family  string
		params  []string
		wantErr bool
	}{
		{"chat.completions", []string{"temperature", "stream"}, false},
		{"chat.completions", nil, false},
		{"chat.completions", []string{"top_p"}, true},
		{"chat.completions", []string{"temperature", "logit_bias"}, true},
		{"messages", []string{"top_p"}, false},
	} {
		err := checkParameters(m, tc.family, tc.params)
		if (err != nil) != tc.wantErr || (err != nil && err.Code != apierror.InvalidRequest) {
			t.Errorf("checkParameters(%s, %v) = %v, want error %v", tc.family, tc.params, err, tc.wantErr)
		}
	}
}
