// Package apistatus carries spec errors across gRPC: core turns an *apierror.Error into a
// status whose ErrorInfo reason is the spec code, and the front (or any internal gRPC
// client) turns the status back. It is the one place that maps the two.
package apistatus

import (
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"modelgateway/core/wire/apierror"
)

// Domain of the ErrorInfo details.
const Domain = "modelgateway"

var grpcCodes = map[string]codes.Code{
	apierror.InvalidKey:             codes.Unauthenticated,
	apierror.InvalidAdminToken:      codes.Unauthenticated,
	apierror.ModelNotFound:          codes.NotFound,
	apierror.NotFound:               codes.NotFound,
	apierror.ModelNotAllowed:        codes.PermissionDenied,
	apierror.EndpointNotAllowed:     codes.PermissionDenied,
	apierror.PricingUnavailable:     codes.PermissionDenied,
	apierror.InvalidRequest:         codes.InvalidArgument,
	apierror.StreamingNotSupported:  codes.InvalidArgument,
	apierror.UnsupportedContentType: codes.InvalidArgument,
	apierror.UnsupportedPromptShape: codes.InvalidArgument,
	apierror.InvalidCatalogCurrency: codes.InvalidArgument,
	apierror.PayloadTooLarge:        codes.ResourceExhausted,
	apierror.RateLimited:            codes.ResourceExhausted,
	apierror.InsufficientBalance:    codes.FailedPrecondition,
	apierror.FailedPrecondition:     codes.FailedPrecondition,
	apierror.DuplicateRequestID:     codes.AlreadyExists,
	apierror.AlreadyExists:          codes.AlreadyExists,
	apierror.UpstreamError:          codes.Unavailable,
	apierror.Unavailable:            codes.Unavailable,
	apierror.UpstreamTimeout:        codes.DeadlineExceeded,
	apierror.MethodNotAllowed:       codes.Unimplemented,
	apierror.Internal:               codes.Internal,
}

// fallback codes for statuses that did not come from us (transport failures, grpc-gateway's
// own decoding errors).
var fallback = map[codes.Code]string{
	codes.Unauthenticated:    apierror.InvalidKey,
	codes.NotFound:           apierror.NotFound,
	codes.PermissionDenied:   apierror.EndpointNotAllowed,
	codes.InvalidArgument:    apierror.InvalidRequest,
	codes.OutOfRange:         apierror.InvalidRequest,
	codes.ResourceExhausted:  apierror.PayloadTooLarge,
	codes.FailedPrecondition: apierror.FailedPrecondition,
	codes.AlreadyExists:      apierror.AlreadyExists,
	codes.Unimplemented:      apierror.NotFound,
	codes.Unavailable:        apierror.Unavailable,
	codes.DeadlineExceeded:   apierror.UpstreamTimeout,
	codes.Canceled:           apierror.InvalidRequest,
}

// ToStatus converts a spec error; requestID is carried for gRPC callers that read it.
func ToStatus(e *apierror.Error, requestID string) error {
	c, ok := grpcCodes[e.Code]
	if !ok {
		c = codes.Internal
	}
	info := &errdetails.ErrorInfo{Reason: e.Code, Domain: Domain, Metadata: map[string]string{}}
	if requestID != "" {
		info.Metadata["request_id"] = requestID
	}
	if e.Status != 0 {
		info.Metadata["http_status"] = strconv.Itoa(e.Status)
	}
	if e.RetryAfter != 0 {
		info.Metadata["retry_after"] = strconv.Itoa(e.RetryAfter)
	}
	st, err := status.New(c, e.Message).WithDetails(info)
	if err != nil {
		return status.Error(c, e.Message)
	}
	return st.Err()
}

// FromError recovers the spec error from any error a gRPC call returned.
func FromError(err error) *apierror.Error {
	st, ok := status.FromError(err)
	if !ok {
		return apierror.New(apierror.Internal, "internal error")
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == Domain {
			e := &apierror.Error{Code: info.Reason, Message: st.Message()}
			if s, err := strconv.Atoi(info.Metadata["http_status"]); err == nil {
				e.Status = s
			}
			e.RetryAfter, _ = strconv.Atoi(info.Metadata["retry_after"])
			return e
		}
	}
	if code, ok := fallback[st.Code()]; ok {
		return &apierror.Error{Code: code, Message: st.Message()}
	}
	return apierror.New(apierror.Internal, "internal error")
}
