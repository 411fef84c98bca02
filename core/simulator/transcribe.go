package simulator

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// POST /v1/audio/transcriptions and /v1/audio/translations (multipart). The text derives from
// the uploaded bytes: "Transcribed <size> bytes of <filename>: " and words picked by the file's
// SHA-256, so a test can tell the upload arrived whole. The audio lasts what a WAV header says,
// otherwise as long as 128 kbit/s audio of that size would. whisper models report usage as
// seconds, the others as tokens (ten audio tokens a second plus the prompt's text tokens, one
// output token per word).

// fallbackByteRate is the byte rate assumed for audio other than WAV: 128 kbit/s.
const fallbackByteRate = 16000

// segmentWords is the length of a transcript segment.
const segmentWords = 8

// languageNames are the names verbose_json reports for the commonest ISO-639-1 codes.
var languageNames = map[string]string{
	"en": "english", "fr": "french", "de": "german", "es": "spanish", "it": "italian",
	"pt": "portuguese", "nl": "dutch", "ja": "japanese", "zh": "chinese", "ru": "russian",
}

// audioDuration is the length in seconds of an upload, rounded to hundredths.
func audioDuration(u *upload) float64 {
	rate, data := int64(fallbackByteRate), u.Size
	h := u.head
	if len(h) >= 44 && string(h[:4]) == "RIFF" && string(h[8:12]) == "WAVE" && string(h[12:16]) == "fmt " {
		if r := int64(binary.LittleEndian.Uint32(h[28:32])); r > 0 {
			rate, data = r, max(0, u.Size-44)
		}
	}
	return max(0.01, math.Round(float64(data)/float64(rate)*100)/100)
}

// segment is a stretch of the transcript with its timing.
type segment struct {
	start, end float64
	words      []string
}

func (s segment) text() string { return strings.Join(s.words, " ") }

// transcript is the simulated recognition of one upload.
type transcript struct {
	text     string
	words    []string
	duration float64
	segments []segment
}

// recognise builds the transcript of u; verb is "Transcribed" or "Translated", n the number of
// words drawn from the file's hash.
func recognise(u *upload, verb string, n int) transcript {
	sum, _ := hex.DecodeString(u.SHA256)
	text := fmt.Sprintf("%s %d bytes of %s: %s.", verb, u.Size, u.Filename, strings.Join(hashWords(sum, n), " "))
	t := transcript{text: text, words: strings.Fields(text), duration: audioDuration(u)}
	at := func(i int) float64 { return math.Round(t.duration*float64(i)/float64(len(t.words))*100) / 100 }
	for i := 0; i < len(t.words); i += segmentWords {
		j := min(i+segmentWords, len(t.words))
		t.segments = append(t.segments, segment{start: at(i), end: at(j), words: t.words[i:j]})
	}
	return t
}

// timestamp formats seconds as SRT (comma) or VTT (dot) do.
func timestamp(sec float64, sep string) string {
	ms := int64(math.Round(sec * 1000))
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}

func (t transcript) srt() string {
	var b strings.Builder
	for i, s := range t.segments {
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", i+1, timestamp(s.start, ","), timestamp(s.end, ","), s.text())
	}
	return b.String()
}

func (t transcript) vtt() string {
	var b strings.Builder
	b.WriteString("WEBVTT\n\n")
	for _, s := range t.segments {
		fmt.Fprintf(&b, "%s --> %s\n%s\n\n", timestamp(s.start, "."), timestamp(s.end, "."), s.text())
	}
	return b.String()
}

type transcriptionTokenDetails struct {
	TextTokens  int `json:"text_tokens"`
	AudioTokens int `json:"audio_tokens"`
}

// transcriptionUsage is either variant: type "tokens" or type "duration".
type transcriptionUsage struct {
	Type              string                     `json:"type"`
	Seconds           *float64                   `json:"seconds,omitempty"`
	InputTokens       *int                       `json:"input_tokens,omitempty"`
	InputTokenDetails *transcriptionTokenDetails `json:"input_token_details,omitempty"`
	OutputTokens      *int                       `json:"output_tokens,omitempty"`
	TotalTokens       *int                       `json:"total_tokens,omitempty"`
}

func usageOf(model, prompt string, t transcript) transcriptionUsage {
	if strings.HasPrefix(model, "whisper") {
		return transcriptionUsage{Type: "duration", Seconds: ptr(math.Ceil(t.duration))}
	}
	d := &transcriptionTokenDetails{AudioTokens: max(1, int(math.Ceil(t.duration*10)))}
	if prompt != "" {
		d.TextTokens = tokensOf(prompt)
	}
	in, out := d.TextTokens+d.AudioTokens, len(t.words)
	return transcriptionUsage{Type: "tokens", InputTokens: &in, InputTokenDetails: d, OutputTokens: &out, TotalTokens: ptr(in + out)}
}

type verboseSegment struct {
	ID               int     `json:"id"`
	Seek             int     `json:"seek"`
	Start            float64 `json:"start"`
	End              float64 `json:"end"`
	Text             string  `json:"text"`
	Tokens           []int   `json:"tokens"`
	Temperature      float64 `json:"temperature"`
	AvgLogprob       float64 `json:"avg_logprob"`
	CompressionRatio float64 `json:"compression_ratio"`
	NoSpeechProb     float64 `json:"no_speech_prob"`
}

type verboseWord struct {
	Word  string  `json:"word"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

type verboseTranscript struct {
	Task     string              `json:"task"`
	Language string              `json:"language"`
	Duration float64             `json:"duration"`
	Text     string              `json:"text"`
	Segments []verboseSegment    `json:"segments,omitempty"`
	Words    []verboseWord       `json:"words,omitempty"`
	Usage    *transcriptionUsage `json:"usage,omitempty"`
}

// verbose builds the verbose_json answer; granularities are the timestamp_granularities[].
func (t transcript) verbose(task, language string, temperature float64, granularities []string) verboseTranscript {
	v := verboseTranscript{Task: task, Language: language, Duration: t.duration, Text: t.text}
	if len(granularities) == 0 || slices.Contains(granularities, "segment") {
		for i, s := range t.segments {
			tokens := make([]int, len(s.words))
			for j, w := range s.words {
				tokens[j] = int(hash64(w) % 50000)
			}
			v.Segments = append(v.Segments, verboseSegment{ID: i, Seek: int(s.start * 100), Start: s.start, End: s.end,
				Text: " " + s.text(), Tokens: tokens, Temperature: temperature, AvgLogprob: -0.25, CompressionRatio: 1.2, NoSpeechProb: 0.01})
		}
	}
	if slices.Contains(granularities, "word") {
		for _, s := range t.segments {
			step := (s.end - s.start) / float64(len(s.words))
			for j, w := range s.words {
				v.Words = append(v.Words, verboseWord{w, math.Round((s.start+step*float64(j))*100) / 100, math.Round((s.start+step*float64(j+1))*100) / 100})
			}
		}
	}
	return v
}

var transcriptFormats = []string{"json", "text", "srt", "vtt", "verbose_json"}

func serveTranscriptions(x *exchange) { serveAudioText(x, "transcribe") }

func serveTranslations(x *exchange) { serveAudioText(x, "translate") }

// serveAudioText answers both routes; task is "transcribe" or "translate".
func serveAudioText(x *exchange, task string) {
	f := x.form
	files := f.files("file")
	model, format, prompt := f.value("model"), f.value("response_format"), f.value("prompt")
	if format == "" {
		format = "json"
	}
	temperature, err := strconv.ParseFloat(f.value("temperature"), 64)
	if f.value("temperature") == "" {
		temperature, err = 0, nil
	}
	switch {
	case len(files) == 0:
		missingParam(x.w, "file")
		return
	case model == "":
		missingParam(x.w, "model")
		return
	case !slices.Contains(transcriptFormats, format):
		invalidParam(x.w, "response_format", fmt.Sprintf("Invalid 'response_format': '%s'. Supported values are: 'json', 'text', 'srt', 'verbose_json' and 'vtt'.", format))
		return
	case err != nil:
		invalidParam(x.w, "temperature", fmt.Sprintf("Invalid 'temperature': '%s' is not a number.", f.value("temperature")))
		return
	}
	a := mediaAnswer(prompt)
	if !x.begin(a) {
		return
	}
	words := x.sim.o.Words
	if a.d.words > 0 {
		words = a.d.words
	}
	// A translation is always English; a transcription is in the language the client names.
	verb, language := "Transcribed", "english"
	if task == "translate" {
		verb = "Translated"
	} else if code := f.value("language"); code != "" {
		language = cmp.Or(languageNames[code], code)
	}
	t := recognise(files[0], verb, words)
	usage := usageOf(model, prompt, t)
	if task == "transcribe" && f.value("stream") == "true" && !strings.HasPrefix(model, "whisper") {
		transcriptEvents(x, a, t, usage)
		return
	}
	steps := len(t.words)
	switch format {
	case "text":
		x.writeBody(a, steps, "text/plain; charset=utf-8", []byte(t.text+"\n"))
	case "srt":
		x.writeBody(a, steps, "text/plain; charset=utf-8", []byte(t.srt()))
	case "vtt":
		x.writeBody(a, steps, "text/plain; charset=utf-8", []byte(t.vtt()))
	case "verbose_json":
		v := t.verbose(task, language, temperature, f.values("timestamp_granularities[]"))
		if task == "transcribe" {
			v.Usage = &usage
		}
		x.writeJSON(a, steps, v)
	default:
		if task == "translate" {
			x.writeJSON(a, steps, struct {
				Text string `json:"text"`
			}{t.text})
			return
		}
		x.writeJSON(a, steps, struct {
			Text  string             `json:"text"`
			Usage transcriptionUsage `json:"usage"`
		}{t.text, usage})
	}
}

// transcriptEvents streams a transcription: transcript.text.delta per word, then
// transcript.text.done with the whole text and the usage.
func transcriptEvents(x *exchange, a *answer, t transcript, usage transcriptionUsage) {
	pieces := chunks(t.text)
	s := x.startStream(a, len(pieces), "\n\n", openAIMidError)
	for _, p := range pieces {
		if !s.step() {
			return
		}
		s.json("", struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}{"transcript.text.delta", p})
	}
	if !s.end() {
		return
	}
	s.json("", struct {
		Type  string             `json:"type"`
		Text  string             `json:"text"`
		Usage transcriptionUsage `json:"usage"`
	}{"transcript.text.done", t.text, usage})
}
