// Package realtime will proxy the realtime WebSocket protocol (GET /v1/realtime); it reaches
// core only through the generated gRPC client, like the front.
package realtime
