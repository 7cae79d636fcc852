package grpcproxy

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// frame is one message as it passes through the proxy: its bytes, never
// decoded. The buffers are the transport's own, held by a reference that
// passes to gRPC when the frame is sent (codec.Marshal).
type frame struct {
	data mem.BufferSlice
}

// free drops a frame that was received but will not be sent.
func (f *frame) free() {
	f.data.Free()
	f.data = nil
}

// codec passes frames through untouched, both on the proxy's server and
// on its calls to the engine, and encodes anything else as protobuf:
// grpc.ForceServerCodecV2 applies to every service of the server, so the
// services registered on it (health, the load report) still need proto.
//
// Its name is empty: it is never registered, and an engine call whose
// client named no content-subtype is sent as the client sent it, plain
// "application/grpc" (a forced codec's name is the call's subtype).
type codec struct{}

var protoCodec = encoding.GetCodecV2(proto.Name)

// Marshal returns a frame's buffers, handing their reference to gRPC,
// which frees them once sent. The frame is left empty, so that a second
// Marshal of it cannot free them twice.
func (codec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*frame); ok {
		data := f.data
		f.data = nil
		return data, nil
	}
	return protoCodec.Marshal(v)
}

// Unmarshal keeps the received buffers in a frame, with a reference of its
// own: gRPC frees its reference as Unmarshal returns.
func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*frame); ok {
		data.Ref()
		f.data = data
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

func (codec) Name() string { return "" }
