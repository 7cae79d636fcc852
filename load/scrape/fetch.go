package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/slotgate/slotgate/load"
)

// The engines' load endpoints.
const (
	pathMetrics    = "/metrics"     // vLLM (Prometheus text), TensorRT-LLM (JSON)
	pathLoads      = "/v1/loads"    // SGLang
	pathServerInfo = "/server_info" // SGLang
)

// maxBody bounds a response body: a vLLM /metrics is some hundred KiB,
// TensorRT-LLM's full buffer of 1000 iterations about 2 MiB.
const maxBody = 32 << 20

const (
	acceptText = "text/plain;version=0.0.4;q=0.9,*/*;q=0.1"
	acceptJSON = "application/json"
)

// fetch makes one scrape of the active dialect, detecting it first when
// there is none yet, and returns the engine's ranks (no overrides).
func (s *Scraper) fetch(ctx context.Context) ([]load.Rank, error) {
	if s.active == "" {
		d, body, err := s.detect(ctx)
		if err != nil {
			return nil, err
		}
		s.active = d
		s.log.Info("engine metrics dialect detected", "dialect", string(d))
		return s.parse(ctx, body)
	}
	path, accept := pathMetrics, acceptText
	if s.active == DialectSGLang {
		path, accept = pathLoads, acceptJSON
	}
	body, err := s.get(ctx, path, accept)
	if err != nil {
		return nil, err
	}
	return s.parse(ctx, body)
}

// parse turns the body of the active dialect's endpoint into ranks.
func (s *Scraper) parse(ctx context.Context, body []byte) ([]load.Rank, error) {
	switch s.active {
	case DialectVLLM:
		s.lastText = body // kept only if it parses: see keepExposition
		return ParseVLLM(bytes.NewReader(body), s.overrides.DataParallelSize)
	case DialectSGLang:
		return s.parseSGLang(ctx, body)
	case DialectTRTLLM:
		ranks, err := ParseTRTLLM(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		s.trtRanks = mergeRanks(s.trtRanks, ranks)
		return s.trtRanks, nil
	}
	return nil, fmt.Errorf("scrape: no parser for dialect %q", s.active)
}

// mergeRanks returns old with each rank of updates replacing its own, and
// ranks new in updates added: TensorRT-LLM's drained endpoint only lists
// the ranks that ran an iteration since the last read.
func mergeRanks(old, updates []load.Rank) []load.Rank {
	out := make([]load.Rank, 0, len(old)+len(updates))
	byRank := make(map[int]bool, len(updates))
	for _, r := range updates {
		byRank[r.DPRank] = true
	}
	for _, r := range old {
		if !byRank[r.DPRank] {
			out = append(out, r)
		}
	}
	out = append(out, updates...)
	sortRanks(out)
	return out
}

// parseSGLang parses /v1/loads with the page size, asking the server for
// it (and max_prefill_tokens) on the first scrape.
func (s *Scraper) parseSGLang(ctx context.Context, body []byte) ([]load.Rank, error) {
	if !s.sglangDone && (s.overrides.BlockSize == 0 || s.overrides.MaxNumBatchedTokens == 0) {
		s.sglangDone = true
		s.sglang = s.sglangInfo(ctx)
	}
	page := s.sglang.PageSize
	if !page.Known() && s.overrides.BlockSize > 0 {
		page = fromStatic(s.overrides.BlockSize)
	}
	ranks, err := ParseSGLang(bytes.NewReader(body), page.N)
	if err != nil {
		return nil, err
	}
	for i := range ranks {
		ranks[i].BlockSize = page
		ranks[i].MaxNumBatchedTokens = s.sglang.MaxPrefillTokens
	}
	return ranks, nil
}

// sglangInfo asks /server_info, then /metrics, for the page size; what
// neither answers stays unknown.
func (s *Scraper) sglangInfo(ctx context.Context) SGLangInfo {
	var info SGLangInfo
	if body, err := s.get(ctx, pathServerInfo, acceptJSON); err == nil {
		info, _ = ParseSGLangServerInfo(bytes.NewReader(body))
	}
	if !info.PageSize.Known() {
		if body, err := s.get(ctx, pathMetrics, acceptText); err == nil {
			if m, err := ParseSGLangMetrics(bytes.NewReader(body)); err == nil {
				info.PageSize = m.PageSize
			}
		}
	}
	if !info.PageSize.Known() {
		s.log.Warn("sglang page size unknown: KV blocks need Overrides.BlockSize")
	}
	return info
}

// detect probes the engine: SGLang's /v1/loads answering JSON loads, then
// /metrics answering a JSON array (TensorRT-LLM) or text with vllm:
// names (vLLM). It returns the dialect and the body that identified it,
// which the caller parses as the first scrape (TensorRT-LLM's endpoint
// drains on read, so that body must not be thrown away).
func (s *Scraper) detect(ctx context.Context) (Dialect, []byte, error) {
	loads, errLoads := s.get(ctx, pathLoads, acceptJSON)
	if errLoads == nil {
		if _, err := ParseSGLang(bytes.NewReader(loads), 0); err == nil {
			return DialectSGLang, loads, nil
		}
	}
	metrics, err := s.get(ctx, pathMetrics, acceptText)
	if err != nil {
		return "", nil, fmt.Errorf("detect engine dialect: %w", errors.Join(errLoads, err))
	}
	trimmed := bytes.TrimSpace(metrics)
	switch {
	case bytes.HasPrefix(trimmed, []byte("[")):
		return DialectTRTLLM, metrics, nil
	case bytes.Contains(metrics, []byte("vllm:")):
		return DialectVLLM, metrics, nil
	}
	return "", nil, errors.New("detect engine dialect: neither /v1/loads (SGLang) nor /metrics (vLLM text, TensorRT-LLM JSON) was recognised")
}

// get fetches base+path and returns the body of a 200 answer, at most
// maxBody bytes.
func (s *Scraper) get(ctx context.Context, path, accept string) ([]byte, error) {
	u := s.base.JoinPath(path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", u.Redacted(), err)
	}
	req.Header.Set("Accept", accept)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("scrape %s: read body: %w", u.Redacted(), err)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("scrape %s: status %s", u.Redacted(), resp.Status)
	case len(body) > maxBody:
		return nil, fmt.Errorf("scrape %s: body larger than %d bytes", u.Redacted(), maxBody)
	}
	return body, nil
}
