package simulator

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
)

// The realtime conversation: items created by the client, committed audio, and the
// assistant's answers; together they are the input of the next response.

// audioBytesPerToken is 100 ms of 24 kHz 16-bit mono PCM: the simulator counts ten audio
// tokens a second, in and out.
const audioBytesPerToken = 2 * sampleRate / 10

// imageTokensPerInput is what one input_image part costs.
const imageTokensPerInput = 85

func audioTokensOf(bytes int) int { return (bytes + audioBytesPerToken - 1) / audioBytesPerToken }

// rtItem is one item of the conversation.
type rtItem struct {
	id          string
	echo        orderedMap[json.RawMessage] // the item as the server reports it
	text        string                      // the text it adds to the prompt
	audioTokens int
	imageTokens int
}

// itemEcho is the item as the server reports it: id and object first, then the fields the
// client sent, then the status.
func itemEcho(id string, fields orderedMap[json.RawMessage]) orderedMap[json.RawMessage] {
	out := orderedMap[json.RawMessage]{{"id", mustJSON(id)}, {"object", mustJSON("realtime.item")}}
	for _, e := range fields {
		if e.key != "id" && e.key != "object" && e.key != "status" {
			out = append(out, e)
		}
	}
	return append(out, entry[json.RawMessage]{"status", mustJSON("completed")})
}

func (c *rtConn) createItem(ev rtClientEvent) bool {
	fields, err := objectEntries(ev.Item)
	if err != nil {
		return c.fail(ev.EventID, "invalid_value", "Invalid 'item': expected an object.")
	}
	var it struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Role      string `json:"role"`
		Output    string `json:"output"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Type       string `json:"type"`
			Text       string `json:"text"`
			Transcript string `json:"transcript"`
			Audio      string `json:"audio"`
		} `json:"content"`
	}
	if err := json.Unmarshal(ev.Item, &it); err != nil {
		return c.fail(ev.EventID, "invalid_value", "Invalid 'item': "+err.Error())
	}
	if it.Type == "" {
		return c.fail(ev.EventID, "missing_required_parameter", "Missing required parameter: 'item.type'.")
	}
	item := rtItem{id: it.ID}
	if item.id == "" {
		item.id = c.nextID("item")
	}
	var text strings.Builder
	text.WriteString(it.Output)
	text.WriteString(it.Arguments)
	for _, p := range it.Content {
		text.WriteString(p.Text)
		text.WriteString(p.Transcript)
		if pcm, err := base64.StdEncoding.DecodeString(p.Audio); err == nil {
			item.audioTokens += audioTokensOf(len(pcm))
		}
		if p.Type == "input_image" {
			item.imageTokens += imageTokensPerInput
		}
	}
	item.text = text.String()
	if it.Type == "message" && it.Role == "user" && strings.TrimSpace(item.text) != "" {
		c.lastUser = item.text
	}
	item.echo = itemEcho(item.id, fields)
	return c.addItem(item)
}

// previousID is the id of the last item, null for an empty conversation.
func (c *rtConn) previousID() *string {
	if n := len(c.items); n > 0 {
		return &c.items[n-1].id
	}
	return nil
}

// addItem appends an item and announces it: conversation.item.added, then .done.
func (c *rtConn) addItem(it rtItem) bool {
	body := struct {
		PreviousItemID *string                     `json:"previous_item_id"`
		Item           orderedMap[json.RawMessage] `json:"item"`
	}{c.previousID(), it.echo}
	c.items = append(c.items, it)
	return c.emit("conversation.item.added", body) && c.emit("conversation.item.done", body)
}

// itemByID answers conversation.item.retrieve and conversation.item.delete.
func (c *rtConn) itemByID(ev rtClientEvent) bool {
	i := slices.IndexFunc(c.items, func(it rtItem) bool { return it.id == ev.ItemID })
	if i < 0 {
		return c.fail(ev.EventID, "invalid_value", "Invalid 'item_id': no item with id '"+ev.ItemID+"' in the conversation.")
	}
	if ev.Type == "conversation.item.retrieve" {
		return c.emit("conversation.item.retrieved", struct {
			Item orderedMap[json.RawMessage] `json:"item"`
		}{c.items[i].echo})
	}
	c.items = slices.Delete(c.items, i, i+1)
	return c.emit("conversation.item.deleted", struct {
		ItemID string `json:"item_id"`
	}{ev.ItemID})
}

func (c *rtConn) appendAudio(ev rtClientEvent) bool {
	pcm, err := base64.StdEncoding.DecodeString(ev.Audio)
	if err != nil {
		return c.fail(ev.EventID, "invalid_value", "Invalid 'audio': not valid base64.")
	}
	c.audio += len(pcm)
	return true
}

// commitAudio turns the input audio buffer into a user item.
func (c *rtConn) commitAudio(ev rtClientEvent) bool {
	if c.audio == 0 {
		return c.fail(ev.EventID, "input_audio_buffer_commit_empty",
			"Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has 0.00ms of audio.")
	}
	item := rtItem{id: c.nextID("item"), audioTokens: audioTokensOf(c.audio)}
	c.audio = 0
	item.echo = itemEcho(item.id, orderedMap[json.RawMessage]{
		{"type", mustJSON("message")},
		{"role", mustJSON("user")},
		{"content", json.RawMessage(`[{"type":"input_audio","transcript":null}]`)},
	})
	if !c.emit("input_audio_buffer.committed", struct {
		PreviousItemID *string `json:"previous_item_id"`
		ItemID         string  `json:"item_id"`
	}{c.previousID(), item.id}) {
		return false
	}
	return c.addItem(item)
}
