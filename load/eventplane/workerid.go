package eventplane

import (
	"encoding/binary"
	"math/bits"
)

// instanceIDMask keeps the low 53 bits, as Dynamo's Kubernetes discovery
// does (INSTANCE_ID_MASK in lib/runtime/src/discovery/kube/utils.rs), so
// that the id survives JSON's float64 numbers.
const instanceIDMask = 1<<53 - 1

// PodInstanceID is the instance id Dynamo's Kubernetes discovery gives the
// pod named podName, which is the worker_id of its ActiveLoad:
// hash_pod_name, Rust's DefaultHasher (SipHash-1-3 with keys 0 and 0) over
// the name as str::hash writes it (its bytes, then 0xff), masked to 53
// bits.
func PodInstanceID(podName string) uint64 {
	msg := append([]byte(podName), 0xff)
	return sipHash13(msg) & instanceIDMask
}

// sipHash13 is SipHash-1-3 with both keys 0: one compression round per
// 8-byte word and three finalization rounds.
func sipHash13(msg []byte) uint64 {
	// The initial state is the constants "somepseudorandomlygeneratedbytes"
	// xor the key, which is 0.
	v0, v1, v2, v3 := uint64(0x736f6d6570736575), uint64(0x646f72616e646f6d), uint64(0x6c7967656e657261), uint64(0x7465646279746573)
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13) ^ v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16) ^ v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21) ^ v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17) ^ v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(msg)
	for len(msg) >= 8 {
		m := binary.LittleEndian.Uint64(msg)
		v3 ^= m
		round()
		v0 ^= m
		msg = msg[8:]
	}
	var last [8]byte
	copy(last[:], msg)
	last[7] = byte(n)
	m := binary.LittleEndian.Uint64(last[:])
	v3 ^= m
	round()
	v0 ^= m
	v2 ^= 0xff
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}
