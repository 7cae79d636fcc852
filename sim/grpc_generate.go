package sim

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// input validates a Generate request and derives what the engine needs,
// as the HTTP API's input does, with vLLM's gRPC defaults: max_tokens
// unset is the rest of the model's length, and n 0 is 1. Refusals are
// INVALID_ARGUMENT, with the HTTP API's messages where it has them.
func (g *GRPCService) input(req *enginepb.GenerateRequest) (genInput, error) {
	sp := req.GetSamplingParams()
	if n := sp.GetN(); n > 1 {
		return genInput{}, status.Errorf(codes.InvalidArgument, "enginesim generates one output per request; n must be 1, got %d.", n)
	}
	ids, err := promptIDs(req)
	if err != nil {
		return genInput{}, err
	}
	maxModelLen := g.engine.Options().MaxModelLen
	requested := maxModelLen - len(ids)
	if sp != nil && sp.MaxTokens != nil {
		requested = int(sp.GetMaxTokens())
	}
	maxTokens, e := resolveMaxTokens(&requested, len(ids), maxModelLen)
	if e != nil {
		return genInput{}, status.Error(codes.InvalidArgument, e.message)
	}
	var reqSeed uint64
	if sp != nil && sp.Seed != nil {
		reqSeed = uint64(int64(sp.GetSeed())) // as the HTTP API reads a negative seed
	}
	return genInput{
		prompt: len(ids), maxTokens: maxTokens, ignoreEOS: sp.GetIgnoreEos(), stream: req.GetStream(),
		key: Key(g.seed, reqSeed, ids),
	}, nil
}

// promptIDs returns the prompt's token ids: the tokenized input's ids, or
// the text's tokens (TokenizeText, as an HTTP completion's string prompt).
func promptIDs(req *enginepb.GenerateRequest) ([]int, error) {
	var ids []int
	switch in := req.GetInput().(type) {
	case *enginepb.GenerateRequest_Tokenized:
		ids = make([]int, len(in.Tokenized.GetInputIds()))
		for i, id := range in.Tokenized.GetInputIds() {
			ids[i] = int(id)
		}
	case *enginepb.GenerateRequest_Text:
		ids = TokenizeText(in.Text)
	default:
		return nil, status.Error(codes.InvalidArgument, "The request has no input: set tokenized or text.")
	}
	if len(ids) == 0 {
		return nil, status.Error(codes.InvalidArgument, "The prompt must not be empty.")
	}
	return ids, nil
}

// chunkMessage is the message of output tokens from through to-1.
func chunkMessage(in genInput, from, to int) *enginepb.GenerateResponse {
	return &enginepb.GenerateResponse{Response: &enginepb.GenerateResponse_Chunk{Chunk: &enginepb.GenerateStreamChunk{
		TokenIds:         tokenIDs(in.key, from, to),
		PromptTokens:     uint32(in.prompt),
		CompletionTokens: uint32(to - from),
	}}}
}

// completeMessage is the message that ends a request: all its output tokens,
// whether streamed or not, and why it ended.
func completeMessage(in genInput, p Progress) *enginepb.GenerateResponse {
	return &enginepb.GenerateResponse{Response: &enginepb.GenerateResponse_Complete{Complete: &enginepb.GenerateComplete{
		OutputIds:        tokenIDs(in.key, 0, p.Tokens),
		FinishReason:     p.FinishReason,
		PromptTokens:     uint32(in.prompt),
		CompletionTokens: uint32(p.Tokens),
	}}}
}

// tokenIDs returns the ids of output tokens from through to-1.
func tokenIDs(key uint64, from, to int) []uint32 {
	ids := make([]uint32, 0, to-from)
	for i := from; i < to; i++ {
		ids = append(ids, uint32(TokenID(key, i)))
	}
	return ids
}
