package messages

import (
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"
)

func TestStopReasonMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		reason  corev1.FinishReason
		seq     string
		anyTool bool
		want    string
		wantSeq string
	}{
		{"stop is end_turn", corev1.FinishReason_FINISH_REASON_STOP, "", false, "end_turn", ""},
		{"a matched stop sequence is named", corev1.FinishReason_FINISH_REASON_STOP_SEQUENCE, "END", false, "stop_sequence", "END"},
		{"length is max_tokens", corev1.FinishReason_FINISH_REASON_LENGTH, "", false, "max_tokens", ""},
		{"tool calls are tool_use", corev1.FinishReason_FINISH_REASON_TOOL_CALLS, "", true, "tool_use", ""},
		{"content filter is refusal", corev1.FinishReason_FINISH_REASON_CONTENT_FILTER, "", false, "refusal", ""},
		{"tool_use without a tool block would hang clients: end_turn", corev1.FinishReason_FINISH_REASON_TOOL_CALLS, "", false, "end_turn", ""},
		{"stop with tool blocks is tool_use", corev1.FinishReason_FINISH_REASON_STOP, "", true, "tool_use", ""},
		{"other is end_turn", corev1.FinishReason_FINISH_REASON_OTHER, "", false, "end_turn", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, seq := stopReason(&corev1.Finish{Reason: c.reason, StopSequence: c.seq}, c.anyTool)
			gotSeq := ""
			if seq != nil {
				gotSeq = *seq
			}
			if got != c.want || gotSeq != c.wantSeq {
				t.Errorf("got %q %q, want %q %q", got, gotSeq, c.want, c.wantSeq)
			}
		})
	}
}

func TestErrorTypeForStreamErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ code, msg, want string }{
		{"upstream_error", "upstream status 529: Overloaded", "overloaded_error"},
		{"upstream_error", "upstream status 429: slow down", "rate_limit_error"},
		{"upstream_error", "the upstream connection failed mid-answer", "api_error"},
		{"upstream_timeout", "the upstream stream stalled", "timeout_error"},
		{"invalid_request_error", "bad", "invalid_request_error"},
	}
	for _, c := range cases {
		if got := errorType(c.code, c.msg); got != c.want {
			t.Errorf("%s %q: got %s, want %s", c.code, c.msg, got, c.want)
		}
	}
}
