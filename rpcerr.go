package main

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"modelgateway/core/wire/apistatus"
)

func protoregistryFind(desc protoreflect.MessageDescriptor) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(desc.FullName())
}

// describeRPCError prints a failed admin call as its spec code and message.
func describeRPCError(err error) error {
	e := apistatus.FromError(err)
	return fmt.Errorf("%s: %s", e.Code, e.Message)
}
