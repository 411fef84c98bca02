package rpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// Reading and checking a batch's input file line by line (CreateBatch): the file's chunks are
// streamed from the store, never held whole.

// chunkReader reads an uploaded file's chunks in order.
type chunkReader struct {
	ctx  context.Context
	st   *store.Store
	id   string
	seq  int
	rest []byte
	done bool
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		if r.done {
			return 0, io.EOF
		}
		data, ok, err := r.st.FileChunk(r.ctx, r.id, r.seq)
		if err != nil {
			return 0, err
		}
		if !ok {
			r.done = true
			continue
		}
		r.seq++
		r.rest = data
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// lineValidator checks an OpenAI batch input line by line as the items stream into the
// database; after a bad line it reads on only to list more errors, and ends the insert.
type lineValidator struct {
	snap     *snapshot.Snapshot
	key      *snapshot.Key
	family   string
	endpoint string
	lines    *bufio.Reader
	seen     map[string]bool
	line     int
	items    int
	errs     []lineError
}

func (v *lineValidator) fail(code, param, format string, args ...any) {
	if len(v.errs) >= maxLineErrors {
		return
	}
	line := v.line
	e := lineError{Code: code, Message: fmt.Sprintf(format, args...), Line: &line}
	if param != "" {
		e.Param = &param
	}
	v.errs = append(v.errs, e)
}

func (v *lineValidator) next() (*store.BatchItem, bool, error) {
	for {
		raw, err := readLine(v.lines)
		if errors.Is(err, io.EOF) && raw == nil {
			if len(v.errs) > 0 {
				return nil, false, errInvalidInput
			}
			if v.items == 0 {
				v.fail("empty_file", "input_file_id", "the input file has no request")
				return nil, false, errInvalidInput
			}
			return nil, false, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			if errors.Is(err, bufio.ErrBufferFull) {
				v.line++
				v.fail("line_too_long", "", "the line is longer than %d bytes", maxBatchLine)
				return nil, false, errInvalidInput
			}
			return nil, false, err
		}
		v.line++
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		it := v.check(raw)
		if it == nil || len(v.errs) > 0 {
			if len(v.errs) >= maxLineErrors {
				return nil, false, errInvalidInput
			}
			continue
		}
		return it, true, nil
	}
}

// readLine reads one line (without its end) of at most maxBatchLine bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxBatchLine {
			return nil, bufio.ErrBufferFull
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(line) == 0 {
				return nil, err
			}
			return line, nil
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

func (v *lineValidator) check(raw []byte) *store.BatchItem {
	if !gjson.ValidBytes(raw) || !gjson.ParseBytes(raw).IsObject() {
		v.fail("invalid_json_line", "", "the line is not a JSON object")
		return nil
	}
	r := gjson.ParseBytes(raw)
	id, method, url, body := r.Get("custom_id"), r.Get("method"), r.Get("url"), r.Get("body")
	switch {
	case id.Type != gjson.String || id.String() == "":
		v.fail("missing_required_parameter", "custom_id", "custom_id must be a non-empty string")
		return nil
	case v.seen[id.String()]:
		v.fail("duplicate_custom_id", "custom_id", "the custom_id %q is used by an earlier line", id.String())
		return nil
	case method.String() != "POST":
		v.fail("invalid_method", "method", "method must be POST")
		return nil
	case url.String() != v.endpoint:
		v.fail("mismatched_endpoint", "url", "url %q is not the batch's endpoint %s", url.String(), v.endpoint)
		return nil
	case !body.IsObject():
		v.fail("missing_required_parameter", "body", "body must be a JSON object")
		return nil
	case body.Get("stream").Type == gjson.True:
		v.fail("invalid_request", "body.stream", "a batch item cannot stream")
		return nil
	}
	model := body.Get("model")
	if model.Type != gjson.String || model.String() == "" {
		v.fail("missing_required_parameter", "body.model", "body.model must be a non-empty string")
		return nil
	}
	if _, e := v.snap.Authorize(v.key, v.family, model.String()); e != nil {
		v.fail(e.Code, "body.model", "%s", e.Message)
		return nil
	}
	v.seen[id.String()] = true
	v.items++
	if v.items > maxOpenAIItems {
		v.fail("too_many_requests", "", "a batch holds at most %d requests", maxOpenAIItems)
		return nil
	}
	return &store.BatchItem{CustomID: id.String(), Model: model.String(), Body: []byte(body.Raw)}
}

// validCustomID: 1 to 64 letters, digits, '_' or '-'. A loop, not a regexp: `{1,64}` compiled
// to a program of 64 states at init, heap that every process of the binary kept.
func validCustomID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := range len(id) {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
