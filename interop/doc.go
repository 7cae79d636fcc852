// Package interop holds slotgate's checks against real third-party
// implementations that are too heavy for slotgate's own go.mod: a NATS
// server run in-process with NATS's own client and an independent
// MessagePack decoder (Dynamo's event plane), and headless Chromium driven
// over the DevTools protocol (the admin port's status page). It is a Go
// module of its own, test-only; the tests build slotgate's binaries from
// the parent module and run them as real processes on 127.0.0.1.
package interop
