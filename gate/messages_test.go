package gate_test

import (
	"testing"

	"github.com/slotgate/slotgate/gate"
)

// TestDynamoMessages pins the overload messages that are Dynamo's, byte
// for byte: frontends match them, and both adapters answer with them.
func TestDynamoMessages(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"capacity", gate.MessageCapacity, "Server overloaded: worker at capacity"},
		{"queue timeout", gate.MessageQueueTimeout, "Server overloaded: request rejected after exceeding the backend admission queue delay"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s message %q, want Dynamo's %q", tc.name, tc.got, tc.want)
		}
	}
}
