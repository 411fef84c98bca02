package media

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// spool holds the file parts staged before the head, one after the other in a single
// temporary file: one descriptor however many files the form has, no memory per byte.
type spool struct {
	dir  string
	f    *os.File // created with the first byte
	size int64
}

func (s *spool) write(b []byte) error {
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "media-upload-*")
		if err != nil {
			return fmt.Errorf("staging the upload: %w", err)
		}
		s.f = f
	}
	n, err := s.f.Write(b)
	s.size += int64(n)
	if err != nil {
		return fmt.Errorf("staging the upload: %w", err)
	}
	return nil
}

// section reads back n bytes staged at off.
func (s *spool) section(off, n int64) io.Reader {
	if n == 0 {
		return bytes.NewReader(nil)
	}
	return io.NewSectionReader(s.f, off, n)
}

// remove deletes the file; nothing can be done about a failure.
func (s *spool) remove() {
	if s.f == nil {
		return
	}
	_ = s.f.Close()
	_ = os.Remove(s.f.Name())
	s.f = nil
}
