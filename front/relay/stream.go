package relay

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// RecvMsg implements grpc.ServerStream.RecvMsg for a front's own stream over its typed Recv,
// for interceptors and generic wrappers. It copies the message into m, so that the stream may
// reuse its own.
func RecvMsg[T proto.Message](m any, recv func() (T, error)) error {
	out, ok := m.(T)
	if !ok {
		return fmt.Errorf("RecvMsg into %T, want %T", m, out)
	}
	msg, err := recv()
	if err != nil {
		return err
	}
	proto.Reset(out)
	proto.Merge(out, msg)
	return nil
}

// SendMsg implements grpc.ServerStream.SendMsg over a typed Send.
func SendMsg[T any](m any, send func(T) error) error {
	msg, ok := m.(T)
	if !ok {
		return fmt.Errorf("SendMsg of %T, want %T", m, msg)
	}
	return send(msg)
}
