package simulator

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
)

// POST /v1/moderations. An input is flagged for violence when it contains the word "kill", or
// for any category a #sim:flag=<category> directive in it names.

// moderationCategories are the 13 categories of the omni models, in the API's order.
var moderationCategories = []string{
	"harassment", "harassment/threatening", "hate", "hate/threatening", "illicit",
	"illicit/violent", "self-harm", "self-harm/intent", "self-harm/instructions", "sexual",
	"sexual/minors", "violence", "violence/graphic",
}

// imageCategories are the categories the omni models also judge on images; the others apply
// to text only.
var imageCategories = []string{
	"self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "violence", "violence/graphic",
}

var killRE = regexp.MustCompile(`(?i)\bkill(s|ed|ing|er|ers)?\b`)

// moderationInput is one input to judge: its text (image URLs included, to seed the scores)
// and which kinds of content it holds.
type moderationInput struct {
	text    string
	hasText bool
	image   bool
}

// moderationInputs reads input: a string, strings (one result each), or an array of text and
// image_url parts that together form one input.
func moderationInputs(raw json.RawMessage) ([]moderationInput, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []moderationInput{{text: one, hasText: true}}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		out := make([]moderationInput, len(many))
		for i, s := range many {
			out[i] = moderationInput{text: s, hasText: true}
		}
		return out, len(out) > 0
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
		return nil, false
	}
	var in moderationInput
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			in.hasText = true
			texts = append(texts, p.Text)
		case "image_url":
			in.image = true
			texts = append(texts, p.ImageURL.URL) // seeds the scores; never flags
		default:
			return nil, false
		}
	}
	in.text = strings.Join(texts, "\n")
	return []moderationInput{in}, true
}

type moderationResult struct {
	Flagged                   bool                 `json:"flagged"`
	Categories                orderedMap[bool]     `json:"categories"`
	CategoryScores            orderedMap[float64]  `json:"category_scores"`
	CategoryAppliedInputTypes orderedMap[[]string] `json:"category_applied_input_types"`
}

// moderate judges one input.
func moderate(in moderationInput) moderationResult {
	flag := parseDirectives(in.text).flag
	if flag == "" && killRE.MatchString(in.text) {
		flag = "violence"
	}
	var r moderationResult
	for _, c := range moderationCategories {
		hit := c == flag
		// Scores far below any threshold, except for the flagged category.
		score := math.Round((1 + unit(hash64(in.text, c))*999)) / 1e6
		if hit {
			score = 0.9 + math.Round(unit(hash64(in.text, c))*99000)/1e6
			r.Flagged = true
		}
		types := []string{}
		if in.hasText {
			types = append(types, "text")
		}
		if in.image && slices.Contains(imageCategories, c) {
			types = append(types, "image")
		}
		r.Categories = append(r.Categories, entry[bool]{c, hit})
		r.CategoryScores = append(r.CategoryScores, entry[float64]{c, score})
		r.CategoryAppliedInputTypes = append(r.CategoryAppliedInputTypes, entry[[]string]{c, types})
	}
	return r
}

func serveModerations(x *exchange) {
	var q struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if !x.decode(&q) {
		return
	}
	if len(q.Input) == 0 || string(q.Input) == "null" {
		missingParam(x.w, "input")
		return
	}
	inputs, ok := moderationInputs(q.Input)
	if !ok {
		invalidParam(x.w, "input", "Invalid 'input': expected a string, an array of strings, or an array of text and image_url objects.")
		return
	}
	if q.Model == "" {
		q.Model = "omni-moderation-latest"
	}
	texts := make([]string, len(inputs))
	for i, in := range inputs {
		texts[i] = in.text
	}
	a := mediaAnswer(strings.Join(texts, "\n"))
	if !x.begin(a) {
		return
	}
	results := make([]moderationResult, len(inputs))
	for i, in := range inputs {
		results[i] = moderate(in)
	}
	x.writeJSON(a, 1, struct {
		ID      string             `json:"id"`
		Model   string             `json:"model"`
		Results []moderationResult `json:"results"`
	}{"modr-" + a.id, q.Model, results})
}
