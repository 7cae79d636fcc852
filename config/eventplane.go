package config

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// defaultNATSServer is Dynamo's NATS server when NATS_SERVER is unset.
const defaultNATSServer = "nats://localhost:4222"

// fillEventPlane reads the settings of Dynamo's event plane: where the
// load is published, for which endpoint, and under which worker id.
func (c *Config) fillEventPlane(r *raw, v *flagenv.Checker) {
	c.DynamoEventHeartbeat = v.Duration("dynamo-event-heartbeat", r.DynamoEventHeartbeat, time.Nanosecond)
	if c.DynamoEventHeartbeat > 0 && c.DynamoEventHeartbeat < time.Second {
		v.Fail("dynamo-event-heartbeat", r.DynamoEventHeartbeat, "must be at least 1s")
	}
	c.fillDynamoEndpoint(r, v)
	transport := strings.ToLower(strings.TrimSpace(r.DynEventPlane))
	if transport != "" && transport != "nats" && transport != "zmq" {
		v.Fail("dyn-event-plane", r.DynEventPlane, "must be nats or zmq")
	}
	server, from := strings.TrimSpace(r.DynamoEventPlane), "dynamo-event-plane"
	if strings.EqualFold(server, "off") {
		return
	}
	if server == "" && !v.Explicit("dynamo-event-plane") {
		switch transport {
		case "nats":
			server, from = strings.TrimSpace(r.NATSServer), "nats-server"
			if server == "" {
				server = defaultNATSServer
			}
		case "zmq":
			v.Warn(v.Name("dyn-event-plane") + " is zmq: slotgate publishes its load over NATS only, since ZMQ subscribers " +
				"find their publishers in Dynamo's discovery records, which slotgate does not write; nothing is published. " +
				"Set " + v.Name("dynamo-event-plane") + " to a NATS server and DYN_EVENT_PLANE=nats on the frontend to publish")
		}
	}
	if server == "" {
		return
	}
	if !natsURL(server) {
		v.Fail(from, redacted(server), "must be nats://[user:pass@]host:port, or off")
		return
	}
	c.DynamoEventPlane = server
	c.fillDynamoWorkerID(r, v)
}

// fillDynamoEndpoint reads dyn://namespace.component.endpoint.
func (c *Config) fillDynamoEndpoint(r *raw, v *flagenv.Checker) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(r.DynamoEndpoint), "dyn://"), ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		v.Fail("dynamo-endpoint", r.DynamoEndpoint, "must be dyn://namespace.component.endpoint, three non-empty names")
		return
	}
	c.DynamoNamespace, c.DynamoComponent, c.DynamoEndpointName = parts[0], parts[1], parts[2]
}

// fillDynamoWorkerID reads the worker id, or the pod name it derives from;
// one of them is needed once the event plane is on.
func (c *Config) fillDynamoWorkerID(r *raw, v *flagenv.Checker) {
	if s := strings.TrimSpace(r.DynamoWorkerID); s != "" {
		id, err := parseWorkerID(s)
		if err != nil {
			v.Fail("dynamo-worker-id", r.DynamoWorkerID, "must be a whole number up to 2^64-1, decimal or 0x-hexadecimal")
			return
		}
		c.DynamoWorkerID = &id
		return
	}
	if pod := strings.TrimSpace(r.PodName); pod != "" {
		c.DynamoPodName = pod
		return
	}
	v.Fail("dynamo-worker-id", r.DynamoWorkerID, "must be set when "+v.Name("dynamo-event-plane")+
		" publishes the load: give the worker's Dynamo instance id, or set POD_NAME (on Kubernetes, from "+
		"metadata.name) for the id Dynamo's Kubernetes discovery derives from it")
}

// parseWorkerID reads a u64, decimal or 0x-hexadecimal.
func parseWorkerID(s string) (uint64, error) {
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// natsURL reports whether s is nats://[user:pass@]host:port with nothing
// after the port.
func natsURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "nats" || u.Hostname() == "" {
		return false
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return false
	}
	return (u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery
}

// redacted is s with the password of a URL that parses replaced, so that
// an error naming a bad server never prints its credentials.
func redacted(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return u.Redacted()
		}
		return strings.Replace(u.String(), u.User.Username()+"@", "xxxxx@", 1) // a token
	}
	return s
}
