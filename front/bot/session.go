package bot

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	catalogv1 "modelgateway/gen/gateway/catalog/v1"
)

// session is a key being created (KeyID empty) or a key's endpoints or models being changed
// with inline keyboards. It lives in the gateway (s.<update id>), so a restart in the middle
// keeps it, and creating the key takes it, so a replayed confirmation cannot mint two keys.
type session struct {
	User    int64  `json:"user"`
	Profile string `json:"profile"`
	KeyID   string `json:"key_id,omitempty"`
	Name    string `json:"name"`
	// Step is "endpoints", "models" or "confirm"; an edit has only its own step.
	Step     string   `json:"step"`
	Families []string `json:"families"`
	Models   []string `json:"models"`
	// AllFamilies and AllModels stand for "*"; otherwise the chosen indexes are set.
	AllFamilies bool   `json:"all_families"`
	AllModels   bool   `json:"all_models"`
	Family      []bool `json:"family"`
	Model       []bool `json:"model"`
	Chat        int64  `json:"chat"`
	Message     int    `json:"message"`
}

// A session unused for a day is forgotten.
const sessionTTL = 24 * time.Hour

// Telegram allows 100 buttons per keyboard; the rest of a long catalogue is reachable through
// "all models".
const maxChoices = 40

// familyOrder is contract.md's order of endpoint families.
var familyOrder = []string{"chat.completions", "completions", "responses", "responses.compact", "messages", "messages.count_tokens",
	"content.generate", "content.count_tokens", "content.embed", "embeddings", "rerank", "moderations",
	"images.generations", "images.edits", "images.variations", "audio.speech", "audio.transcriptions", "audio.translations", "realtime"}

// choices are the endpoint families and models the catalogue serves.
func choices(cat *catalogv1.Catalog) (families, modelIDs []string) {
	seen := map[string]bool{}
	for _, f := range cat.GetFamilies() {
		for _, m := range f.GetModels() {
			if len(modelIDs) < maxChoices {
				modelIDs = append(modelIDs, m.GetId())
			}
			for _, e := range m.GetEndpointFamilies() {
				seen[e] = true
			}
		}
	}
	for _, e := range familyOrder {
		if seen[e] {
			families = append(families, e)
		}
	}
	return families, modelIDs
}

// selection turns a choice into a key policy.
func selection(all bool, options []string, chosen []bool) []string {
	if all {
		return []string{"*"}
	}
	var out []string
	for i, o := range options {
		if i < len(chosen) && chosen[i] {
			out = append(out, o)
		}
	}
	return out
}

// choose is the inverse of selection, for editing a key's current policy.
func choose(options, current []string) (all bool, chosen []bool) {
	chosen = make([]bool, len(options))
	if slices.Contains(current, "*") {
		for i := range chosen {
			chosen[i] = true
		}
		return true, chosen
	}
	for i, o := range options {
		chosen[i] = slices.Contains(current, o)
	}
	return false, chosen
}

func (s *session) toggle(kind byte, arg string) bool {
	all, chosen := &s.AllFamilies, s.Family
	if kind == opModels {
		all, chosen = &s.AllModels, s.Model
	}
	if arg == opAll {
		*all = !*all
		for i := range chosen {
			chosen[i] = *all
		}
		return true
	}
	i, err := strconv.Atoi(arg)
	if err != nil || i < 0 || i >= len(chosen) {
		return false
	}
	chosen[i] = !chosen[i]
	*all = false
	return true
}

// view is the session's message and keyboard for its step.
func (s *session) view(id string) (string, models.ReplyMarkup) {
	cb := func(op string) string { return cbSession + cbSep + id + cbSep + op }
	var rows [][]models.InlineKeyboardButton
	toggles := func(kind string, options []string, chosen []bool, all bool) {
		var row []models.InlineKeyboardButton
		for i, o := range options {
			mark := "▫️ "
			if chosen[i] {
				mark = "✅ "
			}
			row = append(row, models.InlineKeyboardButton{Text: mark + o, CallbackData: cb(kind + strconv.Itoa(i))})
			if len(row) == 2 {
				rows = append(rows, row)
				row = nil
			}
		}
		if row != nil {
			rows = append(rows, row)
		}
		mark := "▫️ "
		if all {
			mark = "✅ "
		}
		rows = append(rows, []models.InlineKeyboardButton{{Text: mark + "all, including future ones", CallbackData: cb(kind + opAll)}})
	}
	var text string
	done := "Next ›"
	if s.KeyID != "" {
		done = "Save"
	}
	switch s.Step {
	case "endpoints":
		text = fmt.Sprintf("Key <b>%s</b>: which endpoint families may it call?", esc(s.Name))
		toggles(string(opEndpoints), s.Families, s.Family, s.AllFamilies)
		rows = append(rows, []models.InlineKeyboardButton{{Text: done, CallbackData: cb(opNext)}, {Text: "Cancel", CallbackData: cb(opCancel)}})
	case "models":
		text = fmt.Sprintf("Key <b>%s</b>: which models may it use?", esc(s.Name))
		toggles(string(opModels), s.Models, s.Model, s.AllModels)
		rows = append(rows, []models.InlineKeyboardButton{{Text: done, CallbackData: cb(opNext)}, {Text: "Cancel", CallbackData: cb(opCancel)}})
	default:
		text = fmt.Sprintf("Create key <b>%s</b>?\nEndpoints: %s\nModels: %s",
			esc(s.Name), esc(strings.Join(selection(s.AllFamilies, s.Families, s.Family), ", ")),
			esc(strings.Join(selection(s.AllModels, s.Models, s.Model), ", ")))
		rows = append(rows, []models.InlineKeyboardButton{{Text: "✅ Create key", CallbackData: cb(opCreate)}, {Text: "Cancel", CallbackData: cb(opCancel)}})
	}
	return text, &models.InlineKeyboardMarkup{InlineKeyboard: rows}
}

func sessionKey(id string) string { return prefixSession + id }

// loadSession reads a session the caller owns; "" when it is gone or someone else's.
func (b *Bot) loadSession(ctx context.Context, id string, user int64) (*session, string, error) {
	var s session
	if err := b.gw.get(ctx, sessionKey(id), &s); err != nil {
		if err == errGone {
			return nil, msgGone, nil
		}
		return nil, "", err
	}
	if s.User != user {
		return nil, msgNotYours, nil
	}
	return &s, "", nil
}
