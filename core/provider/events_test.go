package provider

import (
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
)

// The events built in one allocation are the messages built the plain way, and each is a
// message of its own (changing one changes no other).
func TestEventsEqualPlainMessages(t *testing.T) {
	t.Parallel()
	u := metering.Usage{Input: 20000, CachedInput: 3, CacheWrite: 4, Output: 20, Reasoning: 5, Reliable: true}
	start := &corev1.Start{Model: "m"}
	cases := []struct {
		name       string
		got, plain *corev1.GenerateEvent
	}{
		{"usage", UsageEvent(u), &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Usage{Usage: &corev1.Usage{
			InputTokens: 20000, CachedInputTokens: 3, CacheWriteTokens: 4, OutputTokens: 20, ReasoningTokens: 5, Reliable: true}}}},
		{"start", StartEvent(start), &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Start{Start: &corev1.Start{Model: "m"}}}},
		{"native", NativeEvent("message", []byte(`{"a":1}`)), &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Native{Native: &corev1.Native{Event: "message", Data: []byte(`{"a":1}`)}}}},
		{"text", TextEvent("hi"), &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Text{Text: &corev1.TextDelta{Text: "hi"}}}},
	}
	for _, c := range cases {
		if !proto.Equal(c.got, c.plain) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.plain)
		}
		if b1, err := proto.Marshal(c.got); err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if b2, _ := proto.Marshal(c.plain); string(b1) != string(b2) {
			t.Errorf("%s: wire form differs", c.name)
		}
	}
	a, b := UsageEvent(u), UsageEvent(u)
	a.GetUsage().Cost = "0.02"
	if b.GetUsage().GetCost() != "" || a.GetStart() != nil || StartEvent(start).GetStart() != start {
		t.Error("events share state")
	}
}
