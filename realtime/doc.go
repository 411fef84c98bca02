// Package realtime is the WebSocket front of the realtime route (GET /v1/realtime, spec 4.6).
// It owns the client connection and nothing else: core authorizes the key, family and model,
// holds the balance, dials the upstream and meters each response.done.
//
// Core runs in process, in the handler's goroutine, with the handler acting as the server
// side of the generated Realtime stream (as front/relay does for generation). The first Recv
// returns the handshake as the client made it; nothing has been answered yet, so a refusal is
// an ordinary spec envelope with its status. Only when core sends Opened is the connection
// upgraded. From then on Recv returns the client's frames and Send writes core's frames:
// text, binary, ping, pong and close all cross, none is answered locally (the close
// handshake and pongs come from the upstream, through core).
//
// One reader goroutine per session reads the client and hands frames over through a channel
// of one slot: when the upstream is slow, the client is not read, and a session's memory stays
// bounded by one message.
package realtime
