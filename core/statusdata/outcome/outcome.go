// Package outcome counts core's request outcomes for the status site. It stands apart from
// statusdata, above core/rpc, only while the admin API in core/rpc checks incident components
// against statusdata: statusdata cannot name rpc.Outcome without a circle until then.
package outcome

import (
	"context"

	"modelgateway/core/rpc"
	"modelgateway/core/statusdata"
)

// Observer counts every outcome for the status site.
type Observer struct{ Recorder *statusdata.Recorder }

// Record implements rpc.Observer.
func (m Observer) Record(_ context.Context, o rpc.Outcome) {
	m.Recorder.Record(statusdata.Event{
		EndpointFamily: o.EndpointFamily, Model: o.Model, Status: o.Status,
		Start: o.StartTime, FirstByte: o.FirstByteTime, End: o.EndTime,
	})
}
