package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/config"
)

func TestEventPlaneSettings(t *testing.T) {
	off := func(t *testing.T, c config.Config) { eq(t, "DynamoEventPlane", c.DynamoEventPlane, "") }
	runValidation(t, []validationCase{
		{name: "off by default", check: func(t *testing.T, c config.Config) {
			off(t, c)
			eq(t, "DynamoEventHeartbeat", c.DynamoEventHeartbeat, 10*time.Second)
			eq(t, "endpoint", c.DynamoNamespace+"/"+c.DynamoComponent+"/"+c.DynamoEndpointName, "dynamo/backend/generate")
		}},
		{name: "flag with worker id", args: []string{"--dynamo-event-plane=nats://u:p@nats:4222", "--dynamo-worker-id=0x1f"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "DynamoEventPlane", c.DynamoEventPlane, "nats://u:p@nats:4222")
				if c.DynamoWorkerID == nil || *c.DynamoWorkerID != 31 {
					t.Errorf("DynamoWorkerID %v, want 31", c.DynamoWorkerID)
				}
			}},
		{name: "variable with pod name", env: map[string]string{"SLOTGATE_DYNAMO_EVENT_PLANE": "nats://nats:4222", "POD_NAME": "worker-0",
			"SLOTGATE_DYNAMO_ENDPOINT": "dyn://ns.comp.ep", "SLOTGATE_DYNAMO_EVENT_HEARTBEAT": "1s"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "DynamoPodName", c.DynamoPodName, "worker-0")
				eq(t, "worker id set", c.DynamoWorkerID == nil, true)
				eq(t, "endpoint", c.DynamoNamespace+"/"+c.DynamoComponent+"/"+c.DynamoEndpointName, "ns/comp/ep")
				eq(t, "DynamoEventHeartbeat", c.DynamoEventHeartbeat, time.Second)
			}},
		{name: "max worker id", args: []string{"--dynamo-event-plane=nats://h:1", "--dynamo-worker-id=18446744073709551615"},
			check: func(t *testing.T, c config.Config) { eq(t, "DynamoWorkerID", *c.DynamoWorkerID, uint64(1<<64-1)) }},
		{name: "dynamo nats with NATS_SERVER", env: map[string]string{"DYN_EVENT_PLANE": "nats", "NATS_SERVER": "nats://n:4223", "POD_NAME": "p"},
			check: func(t *testing.T, c config.Config) { eq(t, "DynamoEventPlane", c.DynamoEventPlane, "nats://n:4223") }},
		{name: "dynamo nats default server", env: map[string]string{"DYN_EVENT_PLANE": "NATS", "POD_NAME": "p"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "DynamoEventPlane", c.DynamoEventPlane, "nats://localhost:4222")
			}},
		{name: "flag wins over dynamo's variables", args: []string{"--dynamo-event-plane=nats://mine:1"},
			env:   map[string]string{"DYN_EVENT_PLANE": "nats", "NATS_SERVER": "nats://theirs:2", "POD_NAME": "p"},
			check: func(t *testing.T, c config.Config) { eq(t, "DynamoEventPlane", c.DynamoEventPlane, "nats://mine:1") }},
		{name: "off wins over dynamo's variables", args: []string{"--dynamo-event-plane=off"},
			env: map[string]string{"DYN_EVENT_PLANE": "nats"}, check: off},
		{name: "zmq publishes nothing", env: map[string]string{"DYN_EVENT_PLANE": "zmq"}, check: off},
		{name: "no worker id", args: []string{"--dynamo-event-plane=nats://h:4222"}, probs: []bad{{"--dynamo-worker-id (default)", ""}}},
		{name: "no worker id from dynamo's nats", env: map[string]string{"DYN_EVENT_PLANE": "nats"},
			probs: []bad{{"--dynamo-worker-id (default)", ""}}},
		{name: "bad worker id", args: []string{"--dynamo-event-plane=nats://h:4222", "--dynamo-worker-id=-1"},
			probs: []bad{{"--dynamo-worker-id", "-1"}}},
		{name: "worker id too big", env: map[string]string{"SLOTGATE_DYNAMO_EVENT_PLANE": "nats://h:4222", "SLOTGATE_DYNAMO_WORKER_ID": "0x1ffffffffffffffff"},
			probs: []bad{{"SLOTGATE_DYNAMO_WORKER_ID", "0x1ffffffffffffffff"}}},
		{name: "http url", args: []string{"--dynamo-event-plane=http://h:4222"}, probs: []bad{{"--dynamo-event-plane", "http://h:4222"}}},
		{name: "no port", env: map[string]string{"SLOTGATE_DYNAMO_EVENT_PLANE": "nats://h"},
			probs: []bad{{"SLOTGATE_DYNAMO_EVENT_PLANE", "nats://h"}}},
		{name: "bad NATS_SERVER", env: map[string]string{"DYN_EVENT_PLANE": "nats", "NATS_SERVER": "tls://h:4222"},
			probs: []bad{{"NATS_SERVER", "tls://h:4222"}}},
		// The value is quoted without its password or token: the error
		// must not print credentials (the checker quotes exactly it).
		{name: "bad url hides the password", args: []string{"--dynamo-event-plane=nats://u:hunter2@h"},
			probs: []bad{{"--dynamo-event-plane", "nats://u:xxxxx@h"}}},
		{name: "bad url hides the token", env: map[string]string{"SLOTGATE_DYNAMO_EVENT_PLANE": "nats://s3cr3t@h:0"},
			probs: []bad{{"SLOTGATE_DYNAMO_EVENT_PLANE", "nats://xxxxx@h:0"}}},
		{name: "bad transport", env: map[string]string{"DYN_EVENT_PLANE": "kafka"}, probs: []bad{{"DYN_EVENT_PLANE", "kafka"}}},
		{name: "bad endpoint", args: []string{"--dynamo-endpoint=dyn://a.b"}, probs: []bad{{"--dynamo-endpoint", "dyn://a.b"}}},
		{name: "heartbeat too short", args: []string{"--dynamo-event-heartbeat=500ms"}, probs: []bad{{"--dynamo-event-heartbeat", "500ms"}}},
		{name: "heartbeat zero", args: []string{"--dynamo-event-heartbeat=0"}, probs: []bad{{"--dynamo-event-heartbeat", "0"}}},
	})
}

// TestEventPlaneZMQWarns: Dynamo's ZMQ transport is not spoken, which
// start-up says rather than publishing nowhere in silence.
func TestEventPlaneZMQWarns(t *testing.T) {
	c := mustLoad(t, nil, map[string]string{"DYN_EVENT_PLANE": "zmq"})
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "NATS only") || !strings.Contains(c.Warnings[0], "DYN_EVENT_PLANE") {
		t.Errorf("warnings %q, want one saying slotgate publishes over NATS only", c.Warnings)
	}
}
