package sim

import (
	"encoding/binary"
	"hash/fnv"
	"strings"
)

// Generated output is a function of a request's key, which Key derives from
// the engine seed, the request's own seed and its prompt tokens. Each output
// token is one word of words, drawn with splitmix64(key, index). Without
// ignore_eos a request may stop early: at each position the draw of
// splitmix64(key^stopSalt, index) ends the output with probability
// 1/StopOneIn, the position included (the stop token is a word here too);
// the output is never empty.
const (
	// StopOneIn is the inverse per-token probability of an early stop.
	StopOneIn = 64
	stopSalt  = 0x5eed5eed5eed5eed
)

// wordTable holds the output words, each padded to wordWidth bytes: a
// constant, so the package keeps no mutable state.
const (
	wordWidth = 8
	wordTable = "the     of      and     to      in      a       is      that    for     it      as      was     " +
		"with    be      by      on      not     he      this    are     or      his     from    at      " +
		"which   but     have    an      had     they    you     were    their   one     all     we      " +
		"can     her     has     there   been    if      more    when    will    would   who     so      " +
		"no      time    model   token   cache   block   engine  queue   batch   prompt  decode  prefill " +
		"request stream  rank    slot    "
	wordCount = len(wordTable) / wordWidth
)

// Key derives the generation key of a request from the engine seed, the
// request's seed (0 when it sent none) and its prompt's token ids.
func Key(seed, requestSeed uint64, prompt []int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, v := range []uint64{seed, requestSeed, uint64(len(prompt))} {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	for _, id := range prompt {
		binary.LittleEndian.PutUint64(b[:], uint64(id))
		h.Write(b[:])
	}
	return h.Sum64()
}

// OutputLen is how many tokens a request generates: maxTokens with
// ignoreEOS, else possibly fewer, as described above. FinishReason tells
// which.
func OutputLen(key uint64, maxTokens int, ignoreEOS bool) int {
	if ignoreEOS {
		return maxTokens
	}
	for i := 0; i < maxTokens; i++ {
		if splitmix64(key^stopSalt+uint64(i))%StopOneIn == 0 {
			return i + 1
		}
	}
	return maxTokens
}

// FinishReason is OpenAI's finish_reason for an output of n tokens out of
// maxTokens: "length" when the limit was reached, "stop" otherwise.
func FinishReason(n, maxTokens int) string {
	if n >= maxTokens {
		return FinishLength
	}
	return FinishStop
}

// Word returns the text of output token i of the request with key, without
// spacing.
func Word(key uint64, i int) string {
	k := wordIndex(key, i)
	return strings.TrimRight(wordTable[k*wordWidth:(k+1)*wordWidth], " ")
}

// TokenID returns the id of output token i of the request with key, as the
// gRPC API streams it: its word's place in the word table, above the chat
// template's ids, so that equal words have equal ids.
func TokenID(key uint64, i int) int {
	return firstTextToken + wordIndex(key, i)
}

// wordIndex is the place in wordTable of output token i's word.
func wordIndex(key uint64, i int) int {
	return int(splitmix64(key+uint64(i)) % uint64(wordCount))
}

// splitmix64 is Vigna's SplitMix64 finaliser: a fixed, seedable mix that
// needs no state, so token i can be drawn without drawing 0..i-1.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
