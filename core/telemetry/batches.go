package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// BatchMetrics registers the batch instruments (contract.md "Files and batches"):
// gateway.batch.items (gateway_batch_items_total{outcome}), one per finished item, and
// gateway.batch.queue.depth, the items of every batch not yet finished (read from depth at
// each collection). It returns the count function to give core/batchrun.
func (t *Telemetry) BatchMetrics(depth func(context.Context) (int64, error)) (func(outcome string), error) {
	m := t.mp.Meter("modelgateway")
	items, err := m.Int64Counter("gateway.batch.items", metric.WithDescription("Batch items finished on this replica, by outcome (succeeded, answered, refused, lost)."))
	if err != nil {
		return nil, fmt.Errorf("batch metrics: %w", err)
	}
	queue, err := m.Int64ObservableGauge("gateway.batch.queue.depth", metric.WithDescription("Batch items not finished yet, across every batch and replica."), metric.WithUnit("{item}"))
	if err != nil {
		return nil, fmt.Errorf("batch metrics: %w", err)
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if n, err := depth(ctx); err == nil {
			o.ObserveInt64(queue, n)
		}
		return nil
	}, queue)
	if err != nil {
		return nil, fmt.Errorf("batch metrics: %w", err)
	}
	return func(outcome string) {
		items.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
	}, nil
}
