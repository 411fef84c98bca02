package rpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// formBody is the upstream body of a multipart route: a new form written as the client's
// arrives, part by part, with the model rewritten. It pulls the client's parts from the
// Forward stream only when the upstream transport reads, so an upload streams through with
// at most one data message in memory.
type formBody struct {
	srv   corev1.CoreService_ForwardServer
	first []*corev1.FormPart
	model string
	buf   bytes.Buffer
	mw    *multipart.Writer
	file  io.Writer // the file part being written, nil between parts
	// started is set once the client's stream has been read from: the upload cannot be
	// replayed to another route after that.
	started, done bool
	// err is the client side's failure, e.g. payload_too_large from the front.
	err error
	// limit is the size the hold was computed from (the declared body size, else the
	// route's limit); received counts what came. A caller that sends more than it declared
	// (the gRPC listener's callers are clients too) is refused, so the hold always covers
	// what goes upstream.
	limit, received int64
}

func newFormBody(srv corev1.CoreService_ForwardServer, first []*corev1.FormPart, upstreamModel string, declared int64) *formBody {
	limit := int64(multipartUnknownSize)
	if declared >= 0 {
		limit = min(declared, limit)
	}
	f := &formBody{srv: srv, first: first, model: upstreamModel, limit: limit}
	f.mw = multipart.NewWriter(&f.buf)
	return f
}

func (f *formBody) contentType() string { return f.mw.FormDataContentType() }

func (f *formBody) Read(p []byte) (int, error) {
	for f.buf.Len() == 0 {
		if f.done {
			return 0, io.EOF
		}
		if f.err != nil {
			return 0, f.err
		}
		if err := f.next(); err != nil {
			f.err = err
			return 0, err
		}
	}
	return f.buf.Read(p)
}

// next writes the head's parts, or the next message of the client's stream, into buf.
func (f *formBody) next() error {
	if f.first != nil {
		for _, p := range f.first {
			if err := f.writePart(p); err != nil {
				return err
			}
		}
		f.first = nil
		return nil
	}
	f.started = true
	msg, err := f.srv.Recv()
	if errors.Is(err, io.EOF) {
		f.done = true
		return f.mw.Close()
	}
	if err != nil {
		return err
	}
	switch m := msg.GetMsg().(type) {
	case *corev1.ForwardRequest_Part:
		return f.writePart(m.Part)
	case *corev1.ForwardRequest_Data:
		if f.file == nil {
			return errors.New("file data outside a file part")
		}
		if err := f.count(len(m.Data)); err != nil {
			return err
		}
		_, err := f.file.Write(m.Data)
		return err
	}
	return errors.New("a second head in one Forward stream")
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")

func (f *formBody) count(n int) error {
	if f.received += int64(n); f.received > f.limit {
		return apierror.New(apierror.PayloadTooLarge, "the upload is larger than its declared size or the route's limit")
	}
	return nil
}

func (f *formBody) writePart(p *corev1.FormPart) error {
	if err := f.count(len(p.GetValue())); err != nil {
		return err
	}
	h := textproto.MIMEHeader{}
	disposition := fmt.Sprintf(`form-data; name="%s"`, quoteEscaper.Replace(p.GetName()))
	if p.GetFile() {
		disposition += fmt.Sprintf(`; filename="%s"`, quoteEscaper.Replace(p.GetFilename()))
	}
	h.Set("Content-Disposition", disposition)
	if ct := p.GetContentType(); ct != "" {
		h.Set("Content-Type", ct)
	} else if p.GetFile() {
		h.Set("Content-Type", "application/octet-stream")
	}
	w, err := f.mw.CreatePart(h)
	if err != nil {
		return err
	}
	f.file = nil
	value := p.GetValue()
	if p.GetName() == "model" && !p.GetFile() {
		value = []byte(f.model)
	}
	if p.GetFile() {
		f.file = w
		return nil
	}
	_, err = w.Write(value)
	return err
}
