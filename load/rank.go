package load

// Rank is the load of one data-parallel rank, in the one shape every
// load package shares: the scraper fills what the engine and the static
// overrides say, load/inflight what slotgate's own flights put on the
// rank, load/merge combines the two, and load/busy judges the result.
// Each producer leaves the fields it does not know unknown, so a field's
// Source tells who filled it.
type Rank struct {
	// DPRank is the rank's global data-parallel index (vLLM's engine label,
	// SGLang's dp_rank, TensorRT-LLM's attentionDpRank).
	DPRank int
	// KVTotalBlocks is the rank's KV cache capacity in blocks (engine or
	// static).
	KVTotalBlocks Value
	// KVUsedBlocks is the blocks held by the rank's running requests, as
	// the engine reports them: the authoritative occupancy, which an
	// estimate never stands in for (Dynamo #7753).
	KVUsedBlocks Value
	// ActiveDecodeBlocks is slotgate's estimate of the blocks its flights
	// fill: prompt plus generated tokens over the block size.
	ActiveDecodeBlocks Value
	// ActivePrefillTokens is the prompt tokens not yet computed: the
	// engine's backlog (SGLang's num_waiting_uncached_tokens, TensorRT-LLM's
	// numCtxTokens + numQueuedCtxTokens; vLLM exports none), or slotgate's
	// count of its flights still waiting for their first token.
	ActivePrefillTokens Value
	// MaxNumBatchedTokens is the rank's token budget per step.
	MaxNumBatchedTokens Value
	// NumRequestsRunning and NumRequestsWaiting are the engine's own
	// running batch and waiting queue.
	NumRequestsRunning Value
	NumRequestsWaiting Value
	// BlockSize is the tokens per KV block (SGLang's page size).
	BlockSize Value
	// Flights is slotgate's requests in flight on the rank. Unpinned ones
	// are spread over the ranks, so it is a share, not always whole
	// requests. It is not published: the snapshot counts flights for the
	// whole worker.
	Flights Value
}
