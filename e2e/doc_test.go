// Package e2e runs the real slotgate binary, built once per test run,
// against real HTTP engines on 127.0.0.1. Every wait is bounded; nothing
// asserts on timing.
package e2e_test
