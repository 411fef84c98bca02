package media

import (
	"errors"
	"io"

	"modelgateway/core/wire/apierror"
)

// limitedBody counts the client's body and fails the moment the count passes the limit: a
// lying or absent Content-Length does not help, and no more than limit bytes are ever handed
// on. Exactly limit bytes are fine.
type limitedBody struct {
	r     io.Reader
	n     int64 // bytes read so far
	limit int64
	err   error // sticky once the limit is passed
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// One byte more than is allowed is enough to know.
	if rest := b.limit - b.n + 1; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.limit {
		b.err = tooLarge(b.limit)
		return 0, b.err
	}
	return n, err
}

// tooLarge is relay.ReadBody's error, for the bodies read here.
func tooLarge(limit int64) *apierror.Error {
	return apierror.New(apierror.PayloadTooLarge, "the request body is larger than %d bytes", limit)
}

// bodyError is the spec error for a failure while reading the client's body: ours (too large,
// a bad field) as it is, anything else (a broken connection, a malformed form) as a bad
// request.
func bodyError(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apierror.New(apierror.InvalidRequest, "reading the multipart body: %v", err)
}

func invalid(format string, args ...any) *apierror.Error {
	return apierror.New(apierror.InvalidRequest, format, args...)
}
