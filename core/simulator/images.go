package simulator

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// POST /v1/images/generations (JSON), /v1/images/edits and /v1/images/variations (multipart).
// The pictures are real PNGs (JPEG when output_format asks for it; there is no WebP encoder in
// the standard library, so webp gets a PNG) of one colour derived from the prompt, at the
// requested size scaled down to fit in maxSide×maxSide pixels. dall-e models answer a URL unless
// response_format is b64_json, as the real API does; the URL points at GET /sim/images/, which
// draws the same picture again from its name.

// maxSide bounds the side of a generated picture.
const maxSide = 16

// imageFilePrefix is the path of the pictures behind url answers.
const imageFilePrefix = "/sim/images/"

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// imageParams are the options the three routes share.
type imageParams struct {
	model, size, quality, background, responseFormat, outputFormat string
	n                                                              int
	revise                                                         string // dall-e-3 revises the prompt
}

func isGPTImage(model string) bool { return strings.HasPrefix(model, "gpt-image") }

// check validates and completes the parameters, answering 400 when one is invalid.
func (p *imageParams) check(w http.ResponseWriter) bool {
	if p.model == "" {
		p.model = "dall-e-2"
	}
	switch {
	case p.n < 1 || p.n > 10:
		invalidParam(w, "n", fmt.Sprintf("Invalid 'n': %d is not between 1 and 10.", p.n))
		return false
	case p.model == "dall-e-3" && p.n != 1:
		invalidParam(w, "n", "You must provide n=1 for this model.")
		return false
	case p.responseFormat != "" && p.responseFormat != "url" && p.responseFormat != "b64_json":
		invalidParam(w, "response_format", fmt.Sprintf("Invalid 'response_format': '%s'. Supported values are: 'url' and 'b64_json'.", p.responseFormat))
		return false
	case p.outputFormat != "" && p.outputFormat != "png" && p.outputFormat != "jpeg" && p.outputFormat != "webp":
		invalidParam(w, "output_format", fmt.Sprintf("Invalid 'output_format': '%s'. Supported values are: 'png', 'jpeg' and 'webp'.", p.outputFormat))
		return false
	}
	if _, _, ok := p.dimensions(); !ok {
		invalidParam(w, "size", fmt.Sprintf("Invalid 'size': '%s'. Expected 'auto' or WIDTHxHEIGHT.", p.size))
		return false
	}
	return true
}

// dimensions is the nominal size; auto and unset mean 1024x1024.
func (p *imageParams) dimensions() (w, h int, ok bool) {
	if p.size == "" || p.size == "auto" {
		return 1024, 1024, true
	}
	ws, hs, found := strings.Cut(p.size, "x")
	w, errW := strconv.Atoi(ws)
	h, errH := strconv.Atoi(hs)
	if !found || errW != nil || errH != nil || w < 1 || h < 1 || w > 8192 || h > 8192 {
		return 0, 0, false
	}
	return w, h, true
}

// pixels is the size actually drawn: the nominal one scaled to fit in maxSide×maxSide.
func pixels(w, h int) (int, int) {
	if w <= maxSide && h <= maxSide {
		return w, h
	}
	s := float64(maxSide) / float64(max(w, h))
	return max(1, int(float64(w)*s+0.5)), max(1, int(float64(h)*s+0.5))
}

// picture encodes a w×h picture of colour c.
func picture(c color.NRGBA, w, h int, format string) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if format == "jpeg" {
		_ = jpeg.Encode(&b, img, nil) // a bytes.Buffer does not fail
	} else {
		_ = png.Encode(&b, img)
	}
	return b.Bytes()
}

// colourOf is the colour of the i-th picture for a seed text.
func colourOf(seed string, i int) color.NRGBA {
	h := hash64(seed, strconv.Itoa(i))
	return color.NRGBA{R: uint8(h), G: uint8(h >> 8), B: uint8(h >> 16), A: 0xff}
}

type imageData struct {
	B64JSON       string `json:"b64_json,omitempty"`
	URL           string `json:"url,omitempty"`
	RevisedPrompt string `json:"revised_prompt,omitempty"`
}

type imageTokenDetails struct {
	TextTokens  int `json:"text_tokens"`
	ImageTokens int `json:"image_tokens"`
}

type imageUsage struct {
	TotalTokens         int               `json:"total_tokens"`
	InputTokens         int               `json:"input_tokens"`
	OutputTokens        int               `json:"output_tokens"`
	InputTokensDetails  imageTokenDetails `json:"input_tokens_details"`
	OutputTokensDetails imageTokenDetails `json:"output_tokens_details"`
}

type imagesResponse struct {
	Created      int64       `json:"created"`
	Background   string      `json:"background,omitempty"`
	Data         []imageData `json:"data"`
	OutputFormat string      `json:"output_format,omitempty"`
	Quality      string      `json:"quality,omitempty"`
	Size         string      `json:"size,omitempty"`
	Usage        *imageUsage `json:"usage,omitempty"`
}

// outputTokens is what a GPT image model charges per picture: the published 1024x1024 figure
// of the quality, scaled by area.
func outputTokens(quality string, w, h int) int {
	base := 1056
	switch quality {
	case "low":
		base = 272
	case "high":
		base = 4160
	}
	return max(1, (base*w*h+1024*1024-1)/(1024*1024))
}

// writeImages answers the three routes: n pictures whose colours derive from seed. prompt and
// imageBytes (the uploads) are the input a GPT image model is charged for.
func (x *exchange) writeImages(a *answer, p *imageParams, seed, prompt string, imageBytes int64) {
	w, h, _ := p.dimensions()
	pw, ph := pixels(w, h)
	gpt := isGPTImage(p.model)
	format := "png"
	if gpt && p.outputFormat != "" {
		format = p.outputFormat
	}
	res := imagesResponse{Created: x.now(), Data: make([]imageData, p.n)}
	for i := range res.Data {
		c := colourOf(seed, i)
		// dall-e models answer URLs unless asked for base64; GPT image models only base64.
		if !gpt && p.responseFormat != "b64_json" {
			scheme := "http"
			if x.r.TLS != nil {
				scheme = "https"
			}
			res.Data[i].URL = fmt.Sprintf("%s://%s%s%02x%02x%02x-%dx%d.png", scheme, x.r.Host, imageFilePrefix, c.R, c.G, c.B, pw, ph)
		} else {
			res.Data[i].B64JSON = base64.StdEncoding.EncodeToString(picture(c, pw, ph, format))
		}
		res.Data[i].RevisedPrompt = p.revise
	}
	if gpt {
		res.Background, res.OutputFormat, res.Quality, res.Size = "opaque", format, p.quality, fmt.Sprintf("%dx%d", w, h)
		if p.background == "transparent" {
			res.Background = "transparent"
		}
		if p.quality == "" || p.quality == "auto" {
			res.Quality = "medium"
		}
		u := &imageUsage{InputTokensDetails: imageTokenDetails{TextTokens: tokensOf(prompt)}}
		if imageBytes > 0 {
			u.InputTokensDetails.ImageTokens = int(max(1, (imageBytes+1023)/1024))
		}
		u.InputTokens = u.InputTokensDetails.TextTokens + u.InputTokensDetails.ImageTokens
		u.OutputTokensDetails.ImageTokens = p.n * outputTokens(res.Quality, w, h)
		u.OutputTokens = u.OutputTokensDetails.ImageTokens
		u.TotalTokens = u.InputTokens + u.OutputTokens
		res.Usage = u
	}
	x.writeJSON(a, 1, res)
}

func serveImageGenerations(x *exchange) {
	var q struct {
		Prompt         *string `json:"prompt"`
		Model          string  `json:"model"`
		N              *int    `json:"n"`
		Size           string  `json:"size"`
		Quality        string  `json:"quality"`
		Background     string  `json:"background"`
		ResponseFormat string  `json:"response_format"`
		OutputFormat   string  `json:"output_format"`
	}
	if !x.decode(&q) {
		return
	}
	if q.Prompt == nil || *q.Prompt == "" {
		missingParam(x.w, "prompt")
		return
	}
	p := &imageParams{model: q.Model, size: q.Size, quality: q.Quality, background: q.Background,
		responseFormat: q.ResponseFormat, outputFormat: q.OutputFormat, n: 1}
	if q.N != nil {
		p.n = *q.N
	}
	if !p.check(x.w) {
		return
	}
	if p.model == "dall-e-3" {
		p.revise = "Simulated revision of: " + *q.Prompt
	}
	a := mediaAnswer(*q.Prompt)
	if !x.begin(a) {
		return
	}
	x.writeImages(a, p, *q.Prompt, *q.Prompt, 0)
}

// formImageParams reads the shared options of a multipart image request.
func formImageParams(x *exchange) (*imageParams, bool) {
	f := x.form
	p := &imageParams{model: f.value("model"), size: f.value("size"), quality: f.value("quality"),
		background: f.value("background"), responseFormat: f.value("response_format"),
		outputFormat: f.value("output_format"), n: 1}
	if s := f.value("n"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			invalidParam(x.w, "n", fmt.Sprintf("Invalid 'n': '%s' is not an integer.", s))
			return nil, false
		}
		p.n = n
	}
	return p, p.check(x.w)
}

// imageFormatOK tells whether an upload is a picture the model takes: PNG, and for GPT image
// models also JPEG and WebP.
func imageFormatOK(head []byte, gpt bool) bool {
	switch {
	case bytes.HasPrefix(head, pngSignature):
		return true
	case !gpt:
		return false
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		return true
	}
	return len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP"
}

// checkImages answers 400 unless every upload is a picture the model takes (the mask must be
// a PNG); it returns the seed the uploads contribute and their total size.
func checkImages(x *exchange, images, masks []*upload, gpt bool) (seed string, size int64, ok bool) {
	var b strings.Builder
	for i, u := range slices.Concat(images, masks) {
		if !imageFormatOK(u.head, gpt && i < len(images)) {
			writeParamError(x.w, u.Name, "invalid_image_format",
				fmt.Sprintf("Invalid image file '%s': uploaded images must be PNG files.", u.Filename))
			return "", 0, false
		}
		b.WriteString(u.SHA256)
		size += u.Size
	}
	return b.String(), size, true
}

func serveImageEdits(x *exchange) {
	images := x.form.files("image", "image[]")
	prompt := x.form.value("prompt")
	switch {
	case len(images) == 0:
		missingParam(x.w, "image")
		return
	case prompt == "":
		missingParam(x.w, "prompt")
		return
	}
	p, ok := formImageParams(x)
	if !ok {
		return
	}
	seed, size, ok := checkImages(x, images, x.form.files("mask"), isGPTImage(p.model))
	if !ok {
		return
	}
	a := mediaAnswer(prompt)
	if !x.begin(a) {
		return
	}
	x.writeImages(a, p, prompt+"\x00"+seed, prompt, size)
}

func serveImageVariations(x *exchange) {
	images := x.form.files("image")
	if len(images) == 0 {
		missingParam(x.w, "image")
		return
	}
	p, ok := formImageParams(x)
	if !ok {
		return
	}
	seed, size, ok := checkImages(x, images, nil, false)
	if !ok {
		return
	}
	a := mediaAnswer("")
	if !x.begin(a) {
		return
	}
	x.writeImages(a, p, seed, "", size)
}

// serveImageFile draws the picture a url answer names: /sim/images/<rrggbb>-<w>x<h>.png.
func (s *Simulator) serveImageFile(w http.ResponseWriter, r *http.Request) {
	s.record(r, nil)
	name, _ := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, imageFilePrefix), ".png")
	hexColour, size, _ := strings.Cut(name, "-")
	rgb, err := hex.DecodeString(hexColour)
	p := imageParams{size: size}
	pw, ph, ok := p.dimensions()
	if err != nil || len(rgb) != 3 || !ok || pw > maxSide || ph > maxSide {
		writeError(w, protoOpenAI, http.StatusNotFound, "unknown image "+r.URL.Path)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, protoOpenAI, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(picture(color.NRGBA{R: rgb[0], G: rgb[1], B: rgb[2], A: 0xff}, pw, ph, "png"))
}
