package rpc

import corev1 "modelgateway/gen/gateway/core/v1"

// startInput gives a translated messages stream its best known input count before Start goes
// out: message_start is where LangChain's ChatAnthropic reads input usage, and the provider
// itself reports it there. An adapter that learned the upstream's count from the first chunk
// (content generation reports it in every chunk) has set it already; otherwise the local count
// stands in. The exact counts follow in message_delta. Other protocols report usage only at
// the end, so they are not counted twice.
func (g *Deps) startInput(req *corev1.GenerateRequest, head []*corev1.GenerateEvent) {
	if len(head) == 0 || !req.GetStream() || req.GetProtocol() != corev1.Protocol_PROTOCOL_MESSAGES || g.Counter == nil {
		return
	}
	st := head[0].GetStart()
	if st == nil || st.GetPassthrough() || st.GetInputTokens() > 0 {
		return
	}
	st.InputTokens = g.Counter(req)
}
