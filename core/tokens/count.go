package tokens

import corev1 "modelgateway/gen/gateway/core/v1"

// Fixed overheads, after OpenAI's cookbook "How to count tokens with tiktoken": every chat
// message costs its content plus a few tokens of framing (<|start|>role...<|message|>...<|end|>),
// and every reply is primed with <|start|>assistant<|message|>.
const (
	// PerMessage is the framing of one message; the system prompt counts as a message.
	PerMessage = 3
	// ReplyPriming is the framing of the reply the model would write.
	ReplyPriming = 3
	// PerImage is charged for each image whatever its size: OpenAI's price of a low-detail
	// image. The real cost depends on the pixels and the provider; decoding the image to
	// find out would cost more than the estimate is worth.
	PerImage = 85
)

// Count estimates the input tokens of req: the system prompt, every message part, the tool
// declarations and the response schema, plus the framing above. Sampling parameters, ids and
// opaque signatures are not model input and are not counted. A nil request counts 0.
func Count(req *corev1.GenerateRequest) int64 {
	if req == nil {
		return 0
	}
	n := ReplyPriming
	if s := req.GetSystem(); s != "" {
		n += PerMessage + CountText(s)
	}
	for _, m := range req.GetMessages() {
		n += PerMessage
		for _, p := range m.GetParts() {
			n += countPart(p)
		}
	}
	for _, t := range req.GetTools() {
		n += CountText(t.GetName()) + CountText(t.GetDescription()) + CountText(t.GetParameters())
	}
	// A JSON schema for structured output is sent to the model as part of the prompt.
	n += CountText(req.GetResponseFormat().GetSchema())
	return int64(n)
}

func countPart(p *corev1.Part) int {
	switch k := p.GetKind().(type) {
	case *corev1.Part_Text:
		return CountText(k.Text)
	case *corev1.Part_Image:
		return PerImage
	case *corev1.Part_ToolCall:
		return CountText(k.ToolCall.GetName()) + CountText(k.ToolCall.GetArguments())
	case *corev1.Part_ToolResult:
		return CountText(k.ToolResult.GetContent())
	case *corev1.Part_Thinking:
		// Signatures and redacted data are opaque to the tokenizer; only the text is prose.
		return CountText(k.Thinking.GetText())
	default:
		return 0
	}
}
