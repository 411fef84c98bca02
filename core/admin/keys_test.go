package admin

import (
	"context"
	"errors"
	"testing"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/wire/apierror"
)

// A key's request limits are 0 (no limit) or positive; a negative one is refused before the
// profile is even looked up.
func TestKeyLimitsAreChecked(t *testing.T) {
	t.Parallel()
	s := &Server{}
	if _, err := s.CreateKey(context.Background(), &adminv1.CreateKeyRequest{ProfileId: "00000000-0000-0000-0000-000000000000", Name: "k",
		AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}, MaxRequestsPerSecond: -1}); errCode(err) != apierror.InvalidRequest {
		t.Errorf("a negative limit: %v", err)
	}
	if err := validateLimits(0, 0, 0); err != nil {
		t.Errorf("no limits: %v", err)
	}
	if err := validateLimits(-1, 0, 0); err == nil {
		t.Error("a negative concurrency limit passed")
	}
	if err := validateLimits(0, 0, -5); err == nil {
		t.Error("a negative token limit passed")
	}
}

// errCode is the spec code of an error returned in process ("" for none or another error).
func errCode(err error) string {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}
