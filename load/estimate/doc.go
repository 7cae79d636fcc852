// Package estimate is slotgate's own view of the work a request brings:
// the prompt tokens of an OpenAI request body and the tokens generated in
// its response, read from the bytes as they pass through the proxy.
//
// PromptReader wraps a request body (PromptCounter is the same as an
// io.Writer) and estimates its prompt: a /v1/completions "prompt" as a
// string, an array of strings, an array of token ids or an array of such
// arrays; a /v1/chat/completions "messages" array whose "content" is a
// string or an array of parts with "text". It also reads "max_tokens",
// "max_completion_tokens" and "stream". StreamCounter counts the tokens of
// the response, streamed (text/event-stream) or whole (JSON), and reports
// the first one, where prefill ends. Blocks turns tokens into KV blocks.
//
// # Approximations
//
// Token ids are counted exactly. Text is TextTokens of its UTF-8 bytes,
// about 4 bytes a token (the rule of GIE, llm-d and AIBrix), and each chat
// message adds ChatMessageOverhead tokens of template. This is exactly how
// enginesim (package sim) tokenizes, so estimates agree with its usage; a
// real model's tokenizer differs by tens of percent, more for code and
// non-Latin scripts. Non-text content parts (images, audio), tool
// definitions and tool calls are not counted in a prompt. Streamed
// responses count one token per chunk that carries text or a tool call's
// name or arguments, which undercounts when an engine puts several tokens
// in one chunk; a usage object, when the engine sends one, replaces the
// count with the engine's own.
//
// # Invariants
//
//   - Bytes pass through unchanged: PromptReader returns exactly what the
//     underlying reader returned, errors included, and reads no more than
//     each Read asks for, so the estimate never delays the request.
//   - Nothing is buffered: the JSON is tokenized incrementally, keeping
//     O(nesting depth) bytes plus a few dozen; a body beyond the limit
//     still passes through, but is no longer parsed.
//   - The result depends only on the bytes, never on how they were split
//     across Read or Write calls. (An event's data line that arrives
//     whole is read by a faster scanner, scanLine, which takes only what
//     it reads exactly as the lexer does and leaves the rest to it.)
//   - Malformed input never panics, blocks or errors: it only makes the
//     estimate unknown (Known false) or leaves an event uncounted. The
//     lexer accepts exactly what encoding/json accepts.
//
// The package imports only the standard library.
package estimate
