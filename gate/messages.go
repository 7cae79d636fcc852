package gate

// The messages of the refusals slotgate gives itself, whatever the
// protocol: the HTTP proxy's error bodies and the gRPC proxy's statuses
// carry the same text. The overload messages are Dynamo's, byte for byte:
// frontends match their "Server overloaded:" prefix.
const (
	// MessageCapacity is Dynamo's message for a request refused because
	// the worker's engine slots and its queue are full.
	MessageCapacity = "Server overloaded: worker at capacity"
	// MessageQueueTimeout is Dynamo's message for a request that waited
	// past the queue delay (PR #14369); slotgate gives it for every queue
	// deadline.
	MessageQueueTimeout = "Server overloaded: request rejected after exceeding the backend admission queue delay"
	// MessageQueueTokens: refused because the prompt tokens waiting and
	// the request's own would pass the queue's token limit. It keeps the
	// prefix frontends match.
	MessageQueueTokens = "Server overloaded: queued prompt tokens at capacity"
	// MessageBusy: refused while the worker was busy (--reject-when-busy).
	MessageBusy = "Server overloaded: worker busy"
	// MessagePolicy: refused by the admission policy, when its classifier
	// gave no message of its own.
	MessagePolicy = "Server overloaded: request rejected by admission policy"
	// MessageUnreachable: the engine could not be reached.
	MessageUnreachable = "Server unavailable: engine unreachable"
	// MessageDraining: slotgate is draining and takes no new request.
	MessageDraining = "Server unavailable: draining"
)
