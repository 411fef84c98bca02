package media_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
)

// Speech audio streams to the client as it arrives, before its charge is known; only the
// end of the body waits for the charge. An answer the upstream broke off is charged nothing,
// so the client must not get a cleanly ended file either: its read fails.
func TestSpeechCutByTheUpstreamIsBrokenOffUncharged(t *testing.T) {
	g := gatewaytest.StartMedia(t, gatewaytest.Options{})
	ctx := context.Background()
	c := openaiClient(g)
	speak := func(input string) ([]byte, error) {
		resp, err := c.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{Model: "tts", Input: input, Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	// A whole answer ends cleanly and is charged its per-request price.
	if audio, err := speak("one two three four"); err != nil || len(audio) == 0 {
		t.Fatalf("whole speech: %d bytes, %v", len(audio), err)
	}
	if b := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 1); !b.Equal(decimal.RequireFromString("998.5")) {
		t.Fatalf("balance %s after one speech, want 998.5", b)
	}
	// The upstream drops the connection half way: the client has part of the audio and an error.
	audio, err := speak("one two three four #sim:cut")
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(audio) == 0 {
		t.Fatalf("cut speech read as %d bytes, %v; want part of it and io.ErrUnexpectedEOF", len(audio), err)
	}
	// Nothing charged for it: a later whole answer is the second charge, not the third.
	if _, err := speak("five six"); err != nil {
		t.Fatal(err)
	}
	if b := gatewaytest.Settled(t, g.Pool(), g.ProfileID, 2); !b.Equal(decimal.RequireFromString("997")) {
		t.Fatalf("balance %s, want 997: the cut answer was charged", b)
	}
}
