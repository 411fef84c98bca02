package simulator

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// POST /v1/audio/speech: JSON in, audio out, streamed one chunk per word of the input (about
// 1 KiB each) with Options.ChunkDelay between chunks. wav and pcm carry a real tone (24 kHz,
// 16-bit, mono, as the API sends) and mp3 is made of real silent MPEG frames; opus, aac and flac
// only begin with their format's signature, followed by filler. With stream_format=sse the
// chunks arrive base64 in speech.audio.delta events, then speech.audio.done carries the usage.

// speechTypes are the content types the real API answers per response_format.
var speechTypes = map[string]string{
	"mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac",
	"flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/pcm",
}

// speechChunk is the audio bytes per word of input.
const speechChunk = 1024

// sampleRate is the rate of the PCM the API speaks and listens in.
const sampleRate = 24000

// silentMP3Frame is one MPEG-2 layer III frame, 24 kHz, 32 kbit/s, mono, with zeroed side
// information: 96 bytes that decode to 24 ms of silence.
var silentMP3Frame = func() []byte {
	f := make([]byte, 96)
	copy(f, []byte{0xff, 0xf3, 0x44, 0xc0})
	return f
}()

// wavHeader is the 44-byte RIFF header of a 16-bit mono PCM file with dataLen bytes of samples.
func wavHeader(dataLen int) []byte {
	h := make([]byte, 44)
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+dataLen))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)           // fmt chunk size
	binary.LittleEndian.PutUint16(h[20:], 1)            // PCM
	binary.LittleEndian.PutUint16(h[22:], 1)            // mono
	binary.LittleEndian.PutUint32(h[24:], sampleRate)   // samples per second
	binary.LittleEndian.PutUint32(h[28:], 2*sampleRate) // bytes per second
	binary.LittleEndian.PutUint16(h[32:], 2)            // bytes per sample frame
	binary.LittleEndian.PutUint16(h[34:], 16)           // bits per sample
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(dataLen))
	return h
}

// tone is n bytes of 16-bit little-endian samples of a quiet sine whose pitch derives from
// seed; start is the index of the first sample, so that consecutive chunks join smoothly.
func tone(seed uint32, start, n int) []byte {
	freq := 200 + float64(seed%400)
	b := make([]byte, n)
	for i := 0; i+1 < n; i += 2 {
		t := float64(start+i/2) / sampleRate
		binary.LittleEndian.PutUint16(b[i:], uint16(int16(3000*math.Sin(2*math.Pi*freq*t))))
	}
	return b
}

// filler is n deterministic bytes (xorshift32 from seed).
func filler(seed uint32, n int) []byte {
	b := make([]byte, n)
	x := seed | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// synthesize returns the audio of words words in format, one chunk per word.
func synthesize(format string, seed uint32, words int) [][]byte {
	chunks := make([][]byte, words)
	for i := range chunks {
		switch format {
		case "pcm", "wav":
			chunks[i] = tone(seed, i*speechChunk/2, speechChunk)
		case "mp3":
			frames := (speechChunk + len(silentMP3Frame) - 1) / len(silentMP3Frame)
			chunks[i] = []byte(strings.Repeat(string(silentMP3Frame), frames))
		default:
			chunks[i] = filler(seed+uint32(i), speechChunk)
		}
	}
	switch format {
	case "wav":
		chunks[0] = append(wavHeader(words*speechChunk), chunks[0]...)
	case "opus", "aac", "flac":
		copy(chunks[0], signatures[format])
	}
	return chunks
}

// signatures are the first bytes of the formats whose content is filler.
var signatures = map[string][]byte{
	"opus": []byte("OggS\x00\x02"),
	"aac":  {0xff, 0xf1},
	"flac": []byte("fLaC"),
}

type speechRequest struct {
	Model          string          `json:"model"`
	Input          *string         `json:"input"`
	Voice          json.RawMessage `json:"voice"`
	ResponseFormat string          `json:"response_format"`
	Speed          *float64        `json:"speed"`
	StreamFormat   string          `json:"stream_format"`
}

// voiceOK tells whether voice is a built-in voice name or a custom voice {"id": ...}.
func voiceOK(raw json.RawMessage) bool {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return name != ""
	}
	var custom struct {
		ID string `json:"id"`
	}
	return json.Unmarshal(raw, &custom) == nil && custom.ID != ""
}

func serveSpeech(x *exchange) {
	var q speechRequest
	if !x.decode(&q) {
		return
	}
	if q.ResponseFormat == "" {
		q.ResponseFormat = "mp3"
	}
	switch {
	case q.Model == "":
		missingParam(x.w, "model")
		return
	case q.Input == nil || *q.Input == "":
		missingParam(x.w, "input")
		return
	case len(q.Voice) == 0 || string(q.Voice) == "null":
		missingParam(x.w, "voice")
		return
	case !voiceOK(q.Voice):
		invalidParam(x.w, "voice", "Invalid 'voice': expected a voice name or an object with an id.")
		return
	case len([]rune(*q.Input)) > 4096:
		writeParamError(x.w, "input", "string_above_max_length", "Invalid 'input': string too long. Expected a string with maximum length 4096.")
		return
	case speechTypes[q.ResponseFormat] == "":
		invalidParam(x.w, "response_format", fmt.Sprintf("Invalid 'response_format': '%s'. Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav' and 'pcm'.", q.ResponseFormat))
		return
	case q.Speed != nil && (*q.Speed < 0.25 || *q.Speed > 4):
		invalidParam(x.w, "speed", "Invalid 'speed': expected a number between 0.25 and 4.")
		return
	case q.StreamFormat != "" && q.StreamFormat != "audio" && q.StreamFormat != "sse":
		invalidParam(x.w, "stream_format", fmt.Sprintf("Invalid 'stream_format': '%s'. Supported values are: 'audio' and 'sse'.", q.StreamFormat))
		return
	}
	a := mediaAnswer(*q.Input)
	if !x.begin(a) {
		return
	}
	chunks := synthesize(q.ResponseFormat, a.seed, max(1, len(strings.Fields(*q.Input))))
	if q.StreamFormat == "sse" {
		speechEvents(x, a, chunks, tokensOf(*q.Input))
		return
	}
	s := x.startBody(a, len(chunks), speechTypes[q.ResponseFormat])
	for _, c := range chunks {
		if !s.step() {
			return
		}
		s.write(c)
	}
	s.end()
}

// speechEvents streams the audio as speech.audio.delta events; one output token per chunk.
func speechEvents(x *exchange, a *answer, chunks [][]byte, input int) {
	s := x.startStream(a, len(chunks), "\n\n", openAIMidError)
	for _, c := range chunks {
		if !s.step() {
			return
		}
		s.json("", struct {
			Type  string `json:"type"`
			Audio string `json:"audio"`
		}{"speech.audio.delta", base64.StdEncoding.EncodeToString(c)})
	}
	if !s.end() {
		return
	}
	type usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
	s.json("", struct {
		Type  string `json:"type"`
		Usage usage  `json:"usage"`
	}{"speech.audio.done", usage{input, len(chunks), input + len(chunks)}})
}
