package media

import (
	"bufio"
	"io"
	"mime/multipart"
	"slices"
	"strconv"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

const (
	// chunkSize is the copy buffer and the largest data message.
	chunkSize = 64 << 10
	// maxField caps a plain field, which is read whole.
	maxField = 1 << 20
	// maxFields caps the bytes of all plain fields of a form together, and maxParts the
	// number of parts: the SDKs send a handful of each, and every part costs a header map
	// and a message, so hundreds of thousands of tiny parts in 25 MiB must not be parsed.
	maxFields = 2 << 20
	maxParts  = 256
)

// requiredFiles names the file part a multipart family cannot do without (spec 4.4); the
// SDKs send several images as repeated "image[]" parts.
var requiredFiles = map[string][]string{
	"images.edits":         {"image", "image[]"},
	"images.variations":    {"image", "image[]"},
	"audio.transcriptions": {"file"},
	"audio.translations":   {"file"},
}

// form reads a multipart body part by part: up to the head in the handler, the rest in Recv.
type form struct {
	family        string
	body          *limitedBody
	contentLength int64
	mr            *multipart.Reader
	buf           []byte // the one copy buffer; data messages point into it
	spool         spool
	staged        []stagedFile    // files read before the head, delivered right after it
	pending       *multipart.Part // the file part that made the head ready
	cur           io.Reader       // the file whose bytes are being delivered
	curStaged     bool
	ended         bool // the closing boundary has been read
	sawRequired   bool
	parts         int   // parts read so far
	fieldBytes    int64 // bytes of plain fields read so far
	fieldNames    map[string]bool
	headDone      bool // readHead has returned: core has decided on model, stream and user
	data          *corev1.ForwardRequest_Data
	dataMsg       *corev1.ForwardRequest
}

type stagedFile struct {
	part      *corev1.FormPart
	off, size int64
}

// readBuffer is how much of the client's body is read at once: multipart.Reader alone reads
// the socket 4 KiB at a time, which costs a 25 MiB upload several thousand system calls.
const readBuffer = 64 << 10

func newForm(family, dir string, body *limitedBody, boundary string, contentLength int64) *form {
	data := &corev1.ForwardRequest_Data{}
	return &form{
		family:        family,
		body:          body,
		contentLength: contentLength,
		mr:            multipart.NewReader(bufio.NewReaderSize(body, readBuffer), boundary),
		buf:           make([]byte, chunkSize),
		spool:         spool{dir: dir},
		data:          data,
		dataMsg:       &corev1.ForwardRequest{Msg: data},
	}
}

// readHead reads until core can decide: the model is known and the next part is a file (its
// bytes can stream straight from the client) or the form has ended. Files before that are
// staged.
func (f *form) readHead() (*corev1.ForwardHead, error) {
	head := &corev1.ForwardHead{EndpointFamily: f.family, Multipart: true}
	for {
		p, err := f.nextPart()
		if err == io.EOF { // exactly: a wrapped EOF is a truncated form
			if err := f.end(); err != nil {
				return nil, err
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if isFile(p) {
			f.noteFile(p)
			if head.Model != "" {
				f.pending = p
				break
			}
			if err := f.stage(p); err != nil {
				return nil, err
			}
			continue
		}
		field, err := f.readField(p)
		if err != nil {
			return nil, err
		}
		head.Parts = append(head.Parts, field)
		switch field.GetName() {
		case "model":
			head.Model = string(field.GetValue())
		case "stream":
			head.Stream, _ = strconv.ParseBool(string(field.GetValue()))
		case "user":
			if !slices.Contains(head.Parameters, "user") {
				head.Parameters = append(head.Parameters, "user")
			}
		}
	}
	if head.Model == "" {
		return nil, invalid("model is required")
	}
	if f.ended {
		if err := f.checkRequired(); err != nil {
			return nil, err
		}
	}
	head.BodySize = f.bodySize()
	f.headDone = true
	return head, nil
}

// next is the message after the head: the staged files, then the part that made the head
// ready, then the rest of the form; io.EOF at its end.
func (f *form) next() (*corev1.ForwardRequest, error) {
	for {
		if f.cur != nil {
			n, err := fill(f.cur, f.buf)
			switch {
			case err == io.EOF:
				f.cur = nil
			case err != nil && f.curStaged:
				return nil, apierror.New(apierror.Internal, "reading the staged upload: %v", err)
			case err != nil:
				return nil, err
			}
			if n > 0 {
				f.data.Data = f.buf[:n]
				return f.dataMsg, nil
			}
			continue
		}
		if len(f.staged) > 0 {
			s := f.staged[0]
			f.staged = f.staged[1:]
			f.cur, f.curStaged = f.spool.section(s.off, s.size), true
			return partMessage(s.part), nil
		}
		if p := f.pending; p != nil {
			f.pending = nil
			f.cur, f.curStaged = p, false
			return partMessage(filePart(p)), nil
		}
		if f.ended {
			return nil, io.EOF
		}
		p, err := f.nextPart()
		if err == io.EOF {
			if err := f.end(); err != nil {
				return nil, err
			}
			if err := f.checkRequired(); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if isFile(p) {
			f.noteFile(p)
			f.cur, f.curStaged = p, false
			return partMessage(filePart(p)), nil
		}
		field, err := f.readField(p)
		if err != nil {
			return nil, err
		}
		return partMessage(field), nil
	}
}

// end is the closing boundary: what follows it still counts against the limit.
func (f *form) end() error {
	f.ended = true
	for {
		_, err := f.body.Read(f.buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRequired runs at the end of the form: the route's file must have come.
func (f *form) checkRequired() error {
	if names := requiredFiles[f.family]; len(names) > 0 && !f.sawRequired {
		return invalid("%s is required (a file part)", names[0])
	}
	return nil
}

// stage copies a file part to the spool through the fixed buffer.
func (f *form) stage(p *multipart.Part) error {
	off := f.spool.size
	for {
		n, err := fill(p, f.buf)
		if n > 0 {
			if werr := f.spool.write(f.buf[:n]); werr != nil {
				return apierror.New(apierror.Internal, "%v", werr)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	f.staged = append(f.staged, stagedFile{part: filePart(p), off: off, size: f.spool.size - off})
	return nil
}

func (f *form) noteFile(p *multipart.Part) {
	if slices.Contains(requiredFiles[f.family], p.FormName()) {
		f.sawRequired = true
	}
}

// bodySize is the size core holds for and caps the upload at: the bytes of the parts that go
// upstream (plain field values and file contents) when the head has seen the whole form, else
// the client's Content-Length, else unknown (-1: core assumes the route's limit). It never
// counts what the reader happened to buffer: bytes read ahead of the head's last part are no
// measure of a file that is still to come, and a size taken from them would cap that file.
func (f *form) bodySize() int64 {
	switch {
	case f.ended:
		return f.fieldBytes + f.spool.size
	case f.contentLength >= 0:
		return f.contentLength
	default:
		return -1
	}
}

// isFile tells file parts from plain fields the way the SDKs write them: a file part always
// has a filename.
func isFile(p *multipart.Part) bool { return p.FileName() != "" }

func filePart(p *multipart.Part) *corev1.FormPart {
	return &corev1.FormPart{Name: p.FormName(), Filename: p.FileName(), ContentType: p.Header.Get("Content-Type"), File: true}
}

// nextPart is the form's next part within the part count.
func (f *form) nextPart() (*multipart.Part, error) {
	p, err := f.mr.NextPart()
	if err != nil {
		return nil, err
	}
	if f.parts++; f.parts > maxParts {
		return nil, invalid("the form has more than %d parts", maxParts)
	}
	return p, nil
}

// readField reads a plain field whole, within its own limit and the form's.
func (f *form) readField(p *multipart.Part) (*corev1.FormPart, error) {
	limit := min(maxField, maxFields-f.fieldBytes)
	v, err := io.ReadAll(io.LimitReader(p, limit+1))
	if err != nil {
		return nil, err
	}
	f.fieldBytes += int64(len(v))
	if int64(len(v)) > limit {
		if limit < maxField {
			return nil, invalid("the form's plain fields together are larger than %d bytes", maxFields)
		}
		return nil, invalid("the form field %q is larger than %d bytes", p.FormName(), maxField)
	}
	if err := f.once(p.FormName()); err != nil {
		return nil, err
	}
	return &corev1.FormPart{Name: p.FormName(), Value: v}, nil
}

// decided are the plain fields whose value core acts on, read in the head (readHead). "user"
// is read there too, but only as a parameter name for the capability check, and the SDKs
// send it after the files (their object order): it may come later.
var decided = map[string]bool{"model": true, "stream": true}

// once refuses a form the gateway and the upstream could read differently (contract: one
// reading of a body): a plain field given twice, of which the head would take the first and
// the upstream's form parser the last, and a field core decides on that arrives after the
// head, which core never saw (a "stream" after the file would stream an answer priced as
// whole). Names ending in "[]" are lists by the SDKs' convention and repeat.
func (f *form) once(name string) error {
	if strings.HasSuffix(name, "[]") {
		return nil
	}
	if f.fieldNames[name] {
		return invalid("the form field %q appears twice; a field may appear once", name)
	}
	if f.headDone && decided[name] {
		return invalid("the form field %q must come before the form's files", name)
	}
	if f.fieldNames == nil {
		f.fieldNames = map[string]bool{}
	}
	f.fieldNames[name] = true
	return nil
}

func partMessage(p *corev1.FormPart) *corev1.ForwardRequest {
	return &corev1.ForwardRequest{Msg: &corev1.ForwardRequest_Part{Part: p}}
}

// fill reads until buf is full or r ends (io.EOF, possibly with n > 0). Unlike io.ReadFull it
// keeps a source's own io.ErrUnexpectedEOF (a truncated form) apart from a clean end.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
