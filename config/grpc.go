package config

import (
	"math"
	"strings"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// fillGRPC reads the gRPC proxy's settings. It runs after the proxy and
// admin addresses are read, which the gRPC port must differ from.
func (c *Config) fillGRPC(r *raw, v *flagenv.Checker) {
	if s := strings.TrimSpace(r.EngineGRPCURL); s != "" {
		if u := v.URL("engine-grpc-url", r.EngineGRPCURL); u != nil {
			if u.Scheme != "http" || (u.Path != "" && u.Path != "/") || u.Port() == "" {
				v.Fail("engine-grpc-url", r.EngineGRPCURL, "must be http://host:port: cleartext HTTP/2, without a path")
			} else {
				c.EngineGRPCURL = u
			}
		}
	}
	c.GRPCListen = ""
	if a := strings.TrimSpace(r.GRPCListen); a != "" && !strings.EqualFold(a, "off") {
		c.GRPCListen = v.Address("grpc-listen", r.GRPCListen)
		if c.GRPCListen != "" && !strings.HasSuffix(c.GRPCListen, ":0") &&
			(c.GRPCListen == c.Listen || c.GRPCListen == c.AdminListen) {
			v.Fail("grpc-listen", r.GRPCListen, "must differ from "+v.Name("listen")+" and "+v.Name("admin-listen"))
		}
	}
	c.GRPCMaxMessageBytes = v.Int("grpc-max-message-bytes", r.GRPCMaxMessageBytes, 1024, math.MaxInt32,
		"must be a whole number of bytes from 1024 through 2147483647")
}
