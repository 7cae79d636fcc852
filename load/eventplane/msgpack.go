package eventplane

import "encoding/binary"

// The MessagePack encoder covers exactly what is sent: unsigned integers,
// strings, binary and map headers. Integers take their shortest form, as
// rmp_serde writes them (rmp's write_uint), so the bytes equal those of a
// Dynamo worker.

// appendUint appends n in its shortest MessagePack form.
func appendUint(b []byte, n uint64) []byte {
	switch {
	case n < 1<<7:
		return append(b, byte(n)) // positive fixint
	case n < 1<<8:
		return append(b, 0xcc, byte(n))
	case n < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n < 1<<32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}

// appendStr appends s as a MessagePack str.
func appendStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n)) // fixstr
	case n < 1<<8:
		b = append(b, 0xd9, byte(n))
	case n < 1<<16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// appendBin appends p as MessagePack bin, as serde's serialize_bytes is
// written by rmp_serde.
func appendBin(b, p []byte) []byte {
	switch n := len(p); {
	case n < 1<<8:
		b = append(b, 0xc4, byte(n))
	case n < 1<<16:
		b = binary.BigEndian.AppendUint16(append(b, 0xc5), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
	}
	return append(b, p...)
}

// appendMapHeader appends the header of a map of n entries; n < 16 for
// everything sent, which is a fixmap, the form rmp_serde's named structs
// take.
func appendMapHeader(b []byte, n int) []byte {
	if n < 16 {
		return append(b, 0x80|byte(n))
	}
	return binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
}
