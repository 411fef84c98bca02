package messages

import (
	"encoding/json"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	mw "modelgateway/core/wire/messageswire"
)

// message accumulates canonical events into the non-streaming message object.
type message struct {
	id, model string
	blocks    []mw.ContentBlock
	text      []strings.Builder // text or thinking of blocks[i]
	args      [][]byte          // arguments of blocks[i] when it is a tool_use
	tools     map[int32]int     // canonical tool index → block position
	sealed    bool              // the last thinking block has its signature
	finish    *corev1.Finish
	usage     *corev1.Usage
}

func (m *message) add(b mw.ContentBlock) int {
	m.blocks = append(m.blocks, b)
	m.text = append(m.text, strings.Builder{})
	m.args = append(m.args, nil)
	m.sealed = false
	return len(m.blocks) - 1
}

func (m *message) last(typ string) int {
	if n := len(m.blocks); n > 0 && m.blocks[n-1].Type == typ && !(typ == mw.BlockThinking && m.sealed) {
		return n - 1
	}
	return -1
}

func (m *message) event(ev *corev1.GenerateEvent) {
	switch x := ev.GetEvent().(type) {
	case *corev1.GenerateEvent_Text:
		if x.Text.GetText() == "" {
			return
		}
		i := m.last(mw.BlockText)
		if i < 0 {
			i = m.add(mw.ContentBlock{Type: mw.BlockText})
		}
		m.text[i].WriteString(x.Text.GetText())
	case *corev1.GenerateEvent_Reasoning:
		r := x.Reasoning
		if d := r.GetRedactedData(); d != "" {
			m.add(mw.ContentBlock{Type: mw.BlockRedactedThinking, Data: d})
			return
		}
		if r.GetText() == "" && r.GetSignature() == "" {
			return
		}
		i := m.last(mw.BlockThinking)
		if i < 0 {
			i = m.add(mw.ContentBlock{Type: mw.BlockThinking})
		}
		m.text[i].WriteString(r.GetText())
		if s := r.GetSignature(); s != "" {
			m.blocks[i].Signature = s
			m.sealed = true
		}
	case *corev1.GenerateEvent_ToolCall:
		tc := x.ToolCall
		if _, ok := m.tools[tc.GetIndex()]; ok {
			return
		}
		m.tools[tc.GetIndex()] = m.add(mw.ContentBlock{Type: mw.BlockToolUse, ID: tc.GetId(), Name: tc.GetName()})
	case *corev1.GenerateEvent_ToolArguments:
		ta := x.ToolArguments
		i, ok := m.tools[ta.GetIndex()]
		if !ok {
			i = m.add(mw.ContentBlock{Type: mw.BlockToolUse})
			m.tools[ta.GetIndex()] = i
		}
		m.args[i] = append(m.args[i], ta.GetArguments()...)
	case *corev1.GenerateEvent_Finish:
		m.finish = x.Finish
	case *corev1.GenerateEvent_Usage:
		m.usage = x.Usage
	}
}

func (m *message) build() mw.Message {
	content := make([]mw.ContentBlock, len(m.blocks))
	for i, b := range m.blocks {
		switch b.Type {
		case mw.BlockText:
			b.Text = m.text[i].String()
		case mw.BlockThinking:
			b.Thinking = m.text[i].String()
		case mw.BlockToolUse:
			b.Input = toolInput(m.args[i])
			b.ID = toolUseID(b.ID)
		}
		content[i] = b
	}
	reason, seq := stopReason(m.finish, len(m.tools) > 0)
	u := m.usage
	return mw.Message{
		ID: m.id, Type: "message", Role: mw.RoleAssistant, Model: m.model, Content: content,
		StopReason: &reason, StopSequence: seq,
		Usage: mw.FullUsage(u.GetInputTokens(), u.GetOutputTokens(), u.GetCachedInputTokens(), u.GetCacheWriteTokens()),
	}
}

// toolInput is the arguments as the object the protocol requires: "{}" for none, and text
// that is not a JSON object wrapped as {"_raw": text} rather than sent as a string.
func toolInput(args []byte) json.RawMessage {
	s := strings.TrimSpace(string(args))
	if s == "" {
		return json.RawMessage(`{}`)
	}
	if s[0] == '{' && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	wrapped, _ := json.Marshal(map[string]string{"_raw": string(args)})
	return wrapped
}
