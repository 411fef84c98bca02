package media

import (
	"errors"
	"io"
	"sync"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// errRequestEnded is what a Recv gets once the handler has finished with the client's body.
var errRequestEnded = errors.New("media: the request has ended")

// request is the client side of the stream: the head, then for a multipart route the rest of
// the form. Core may call Recv from another goroutine than the handler's (its upstream
// transport reads the body while the handler waits); mu serialises that with the end of the
// request, after which the client's body must not be touched.
type request struct {
	mu     sync.Mutex
	head   *corev1.ForwardHead // until Recv has returned it
	form   *form               // multipart routes
	err    error               // sticky: io.EOF, a failure, or errRequestEnded
	failed *apierror.Error     // the client's body failed after the head
	closed bool
}

func (q *request) recv() (*corev1.ForwardRequest, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return nil, q.err
	}
	msg, err := q.next()
	if err != nil {
		if err != io.EOF {
			q.failed = bodyError(err)
			err = q.failed // core passes it back as the call's error
		}
		q.err = err
	}
	return msg, err
}

func (q *request) next() (*corev1.ForwardRequest, error) {
	if h := q.head; h != nil {
		q.head = nil
		return &corev1.ForwardRequest{Msg: &corev1.ForwardRequest_Head{Head: h}}, nil
	}
	if q.form == nil {
		return nil, io.EOF
	}
	return q.form.next()
}

// close ends the client side: a Recv in progress is waited for, later ones fail (with io.EOF
// when everything had been delivered anyway), and the staged files are removed. It may be
// called more than once.
func (q *request) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	if q.err == nil {
		q.err = errRequestEnded
		if q.head == nil && q.form == nil {
			q.err = io.EOF
		}
	}
	if q.form != nil {
		q.form.spool.remove()
	}
}

// failure is the client body's failure after the head, if any: the answer to give when core
// fails the call, whatever error core made of it.
func (q *request) failure() *apierror.Error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failed
}
