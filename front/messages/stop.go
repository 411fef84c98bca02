package messages

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	mw "modelgateway/core/wire/messageswire"
)

// stopReason maps the canonical finish (translation.md 3). A stop_reason of tool_use without
// a tool_use block makes clients wait for a call that never comes, and tool_use blocks under
// end_turn are ignored by agents that loop on tool_use, so the presence of tool calls decides
// between the two.
func stopReason(f *corev1.Finish, anyTool bool) (string, *string) {
	var reason string
	var seq *string
	switch f.GetReason() {
	case corev1.FinishReason_FINISH_REASON_STOP_SEQUENCE:
		reason = mw.StopStopSequence
		if s := f.GetStopSequence(); s != "" {
			seq = &s
		}
	case corev1.FinishReason_FINISH_REASON_LENGTH:
		reason = mw.StopMaxTokens
	case corev1.FinishReason_FINISH_REASON_TOOL_CALLS:
		reason = mw.StopToolUse
	case corev1.FinishReason_FINISH_REASON_CONTENT_FILTER:
		reason = mw.StopRefusal
	default:
		reason = mw.StopEndTurn
	}
	switch {
	case reason == mw.StopToolUse && !anyTool:
		reason = mw.StopEndTurn
	case reason == mw.StopEndTurn && anyTool:
		reason = mw.StopToolUse
	}
	return reason, seq
}

// errorType is error.type for a stream error event. Upstream failures keep the class the
// SDKs act on (rate limit, overload) where the message says which.
func errorType(code, msg string) string {
	switch code {
	case apierror.InvalidRequest, apierror.StreamingNotSupported, apierror.UnsupportedPromptShape:
		return mw.ErrInvalidRequest
	case apierror.InvalidKey:
		return mw.ErrAuthentication
	case apierror.InsufficientBalance:
		return mw.ErrBilling
	case apierror.ModelNotAllowed, apierror.EndpointNotAllowed, apierror.PricingUnavailable:
		return mw.ErrPermission
	case apierror.ModelNotFound:
		return mw.ErrNotFound
	case apierror.PayloadTooLarge:
		return mw.ErrTooLarge
	case apierror.UpstreamTimeout:
		return mw.ErrTimeout
	case apierror.Unavailable:
		return mw.ErrOverloaded
	case mw.ErrRateLimit, mw.ErrOverloaded, mw.ErrAPI:
		return code
	}
	switch {
	case strings.Contains(msg, "status 429"):
		return mw.ErrRateLimit
	case strings.Contains(msg, "status 529"), strings.Contains(msg, "Overloaded"):
		return mw.ErrOverloaded
	}
	return mw.ErrAPI
}

// messageID keeps an upstream msg_ id and gives any other id the protocol's prefix.
func messageID(id string) string {
	switch {
	case strings.HasPrefix(id, "msg_"):
		return id
	case id != "":
		return "msg_" + id
	}
	return "msg_" + randomID()
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
