package rpc

import (
	corev1 "modelgateway/gen/gateway/core/v1"
)

// A hold's input estimate (billing.InputEstimate) is half a token per byte of the body: above
// what any tokenizer makes of text, and of inline media too, whose base64 bytes far exceed
// the tokens providers count for them per second of audio or video. It is not above what
// providers count for a small image (they count a fixed minimum per image or tile, whatever
// its bytes) nor for media the body only refers to (a URL, a file id, a file URI), which cost
// nothing in the body. Each such part adds a fixed bound to the estimate:
//
//   - imageTokens for each image, inline or referenced: above the largest per-image counts the
//     providers document (a few thousand tokens at the highest detail);
//   - fileTokens for each file, document, or media part given by reference, and each inline
//     file or document (PDF pages count as text and an image each): the length of a referred
//     file is unknown, and this is the bound its request must be able to pay for. Upstreams
//     that report their input count at the start (messages, content generation) have it
//     corrected before any output is delivered (running.pass); the others report it only
//     with the final usage, when the charge covers it or the end of the answer is withheld.
const (
	imageTokens = 6_000
	fileTokens  = 100_000
)

// mediaEstimate is the input tokens a request's media parts add to its hold's estimate: the
// parts found in the raw body (any protocol) or, for a caller without one, the structured
// request's images.
func mediaEstimate(req *corev1.GenerateRequest) int64 {
	images, files := mediaParts(req.GetRawBody())
	var structured int64
	for _, m := range req.GetMessages() {
		for _, p := range m.GetParts() {
			if p.GetImage() != nil {
				structured++
			}
		}
	}
	return max(images, structured)*imageTokens + files*fileTokens
}

// mediaParts counts the media parts of a JSON body in every protocol's spelling, by member
// name and type value: chat's image_url parts and file objects, responses' input_image and
// input_file, messages' image and document blocks, content generation's inlineData and
// fileData (either case). Inline audio (input_audio) adds nothing: its bytes bound it. One
// pass over the body's member names, no allocation.
func mediaParts(body []byte) (images, files int64) {
	for i := 0; i < len(body); i++ {
		if body[i] != '"' {
			continue
		}
		end := stringEnd(body, i)
		if end < 0 {
			return images, files
		}
		colon := skipSpace(body, end)
		if colon >= len(body) || body[colon] != ':' {
			i = end - 1
			continue
		}
		name := body[i+1 : end-1]
		i = colon
		v := skipSpace(body, colon+1)
		if v >= len(body) {
			return images, files
		}
		switch string(name) {
		case "inlineData", "inline_data", "fileData", "file_data", "file":
			// Content generation's parts and chat's file part are objects; chat's file part
			// has a file_data string, and messages' sources a "type":"file", neither counted.
			if body[v] == '{' {
				if name[0] == 'i' {
					images++
				} else {
					files++
				}
			}
			continue
		case "type":
		default:
			continue
		}
		if body[v] != '"' {
			continue
		}
		e := stringEnd(body, v)
		if e < 0 {
			return images, files
		}
		switch string(body[v+1 : e-1]) {
		case "image_url", "input_image", "image":
			images++
		case "input_file", "document":
			files++
		}
		i = e - 1
	}
	return images, files
}
