// Package media is the HTTP front of the forwarded routes: rerank and moderations (spec 4.3),
// images and audio (spec 4.4). It checks the content type and the body limit (spec 8), reads
// only as much of the body as core needs to decide (the model), and runs core's Forward RPC
// in process, the handler itself being the server side of the stream.
//
// A JSON route sends the whole body in the head; the answer comes back as a head, data and
// usage. A multipart route is streamed: the official SDKs write a form's parts in
// lexicographic order, so the file usually comes before "model". File parts read before the
// model is known are staged in one temporary file (memory stays flat whatever the upload
// size), removed when the request ends. The head carries the plain fields read before it; the
// staged files follow as part and data messages, then the rest of the form as it arrives from
// the client. Plain fields in the head are thus moved ahead of the staged files, which
// multipart consumers do not care about; files keep their order relative to each other and to
// the later fields.
//
// Data messages are reused so that an upload costs no memory per byte: the message a Recv
// returns with data, and its bytes, are valid until the next Recv. A consumer that keeps them
// must copy (RecvMsg, which stream interceptors use, copies).
package media
