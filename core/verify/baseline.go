package verify

import (
	"context"
)

// Baseline sends a pair's smallest request (the baseline probe: one word in, at most
// ProbeMaxTokens out, no optional parameter) and drains the answer. The status site's
// synthetic probe uses it to keep the model matrix fresh; like every probe it calls the
// adapter directly, so nothing is metered or charged.
func (p *Prober) Baseline(ctx context.Context, t *Target) error {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	maxTokens := int64(ProbeMaxTokens)
	if l := t.Model.OutputTokenLimit; l != nil && *l > 0 {
		maxTokens = min(maxTokens, int64(*l))
	}
	return p.send(ctx, t, request(t.Model.ID, t.Family, "", maxTokens))
}
