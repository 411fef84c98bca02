package simulator

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
)

// Multipart uploads (image edits and variations, audio transcriptions and translations) are read
// part by part straight from the connection: a file is hashed and counted as it streams past and
// only its first bytes are kept, so a 25 MiB upload costs the simulator a few kilobytes, and a
// gateway benchmark measures the gateway's memory rather than the upstream's.

// FormPart is one part of a multipart request as it arrived.
type FormPart struct {
	Name string
	// Value is a plain field's value.
	Value string
	// File is set for a part with a filename parameter; such a part has no Value but its
	// Filename, ContentType, Size in bytes and SHA256 (lowercase hex) instead.
	File        bool
	Filename    string
	ContentType string
	Size        int64
	SHA256      string
}

// LastForm returns the parts of the last multipart request in the order they arrived (nil before
// any). A request rejected half way records the parts read until then.
func (s *Simulator) LastForm() []FormPart {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.form)
}

// headSize is how much of a file is kept to recognise its format.
const headSize = 64

// maxField bounds a plain field; prompts are at most a few thousand characters.
const maxField = 1 << 20

// upload is a received part and, for a file, its first bytes.
type upload struct {
	FormPart
	head []byte
}

// form is a parsed multipart request.
type form struct {
	parts []upload
}

// value returns the first plain field called name, "" when there is none.
func (f *form) value(name string) string {
	for _, p := range f.parts {
		if !p.File && p.Name == name {
			return p.Value
		}
	}
	return ""
}

// values returns every plain field called name, in order (array fields repeat "name[]").
func (f *form) values(name string) []string {
	var out []string
	for _, p := range f.parts {
		if !p.File && p.Name == name {
			out = append(out, p.Value)
		}
	}
	return out
}

// files returns the file parts whose name is one of names, in order.
func (f *form) files(names ...string) []*upload {
	var out []*upload
	for i := range f.parts {
		if p := &f.parts[i]; p.File && slices.Contains(names, p.Name) {
			out = append(out, p)
		}
	}
	return out
}

// formError is a request that cannot be read as a form, with the status to answer.
type formError struct {
	status int
	msg    string
}

// readForm reads the request body as multipart/form-data, part by part. It returns what it read
// even when it fails, so that the parts received are recorded.
func readForm(w http.ResponseWriter, r *http.Request) (*form, *formError) {
	f := &form{}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return f, &formError{http.StatusBadRequest, "Invalid Content-Type header: expected multipart/form-data with a boundary."}
	}
	mr := multipart.NewReader(http.MaxBytesReader(w, r.Body, maxBody), params["boundary"])
	buf := make([]byte, 32<<10)
	for {
		// A raw part keeps the bytes exactly as sent: the recorded hash is that of the upload.
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return f, bodyError(err)
		}
		u, ferr := readPart(p, buf)
		if ferr != nil {
			return f, ferr
		}
		f.parts = append(f.parts, u)
	}
}

// readPart reads one part: a file is hashed and counted, a field kept whole.
func readPart(p *multipart.Part, buf []byte) (upload, *formError) {
	defer p.Close()
	u := upload{FormPart: FormPart{Name: p.FormName()}}
	_, disp, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	name, isFile := disp["filename"]
	if !isFile {
		v, err := io.ReadAll(io.LimitReader(p, maxField+1))
		if err != nil {
			return u, bodyError(err)
		}
		if len(v) > maxField {
			return u, &formError{http.StatusBadRequest, fmt.Sprintf("Field '%s' is longer than %d bytes.", u.Name, maxField)}
		}
		u.Value = string(v)
		return u, nil
	}
	u.File, u.Filename, u.ContentType = true, name, p.Header.Get("Content-Type")
	h := sha256.New()
	head := &headWriter{}
	n, err := io.CopyBuffer(io.MultiWriter(h, head), p, buf)
	if err != nil {
		return u, bodyError(err)
	}
	u.Size, u.SHA256, u.head = n, hex.EncodeToString(h.Sum(nil)), head.b
	return u, nil
}

// bodyError turns a failure to read the body into the status to answer.
func bodyError(err error) *formError {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &formError{http.StatusRequestEntityTooLarge, "request body too large"}
	}
	return &formError{http.StatusBadRequest, "could not read the multipart body: " + err.Error()}
}

// headWriter keeps the first headSize bytes written to it.
type headWriter struct{ b []byte }

func (h *headWriter) Write(p []byte) (int, error) {
	if room := headSize - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// serveForm answers a multipart route: it records the request, reads the form as a stream,
// records its parts, then hands over to h.
func (s *Simulator) serveForm(w http.ResponseWriter, r *http.Request, h func(*exchange)) {
	s.record(r, nil)
	if r.Method != http.MethodPost {
		writeError(w, protoOpenAI, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	f, ferr := readForm(w, r)
	parts := make([]FormPart, len(f.parts))
	for i, p := range f.parts {
		parts[i] = p.FormPart
	}
	s.mu.Lock()
	s.form = parts
	s.mu.Unlock()
	if ferr != nil {
		writeError(w, protoOpenAI, ferr.status, ferr.msg)
		return
	}
	h(&exchange{sim: s, w: w, r: r, form: f, proto: protoOpenAI})
}
