package verify

import (
	"context"
)

// Baseline sends a pair's smallest request (the baseline probe: one word in, at most
// ProbeMaxTokens out, no optional parameter) and drains the answer. The status site's
// synthetic probe uses it to keep the model matrix fresh; like every probe it calls the
// adapter directly, so nothing is metered or charged.
func (p *Prober) Baseline(ctx context.Context, t *Target) error {
	return p.sendProbe(ctx, t, "")
}
