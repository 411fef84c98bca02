package store

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
)

// KeptBufferMax is keptBufferMax, for TestSettleReusesItsConnectionsBuffer.
const KeptBufferMax = keptBufferMax

// KeptBuffer is the capacity of the buffer pc keeps for settlements (lendBuffer), 0 for none.
func KeptBuffer(pc *pgconn.PgConn) int {
	if b, ok := pc.CustomData()[settleBufferKey].(*settleBuffer); ok {
		return cap(b.buf)
	}
	return 0
}

// SettleMessageBytes is the room lendBuffer gives a settlement of batch (settleMessageBytes),
// for TestSettleReusesItsConnectionsBuffer. Every record in it has a cost.
func SettleMessageBytes(batch []Settlement) int {
	costs := make([]string, len(batch))
	for i := range batch {
		costs[i] = batch[i].Record.Cost.Decimal.String()
	}
	return settleMessageBytes(settleArgs(arrayWriter{}, uuid.UUID{}, len(batch), func(j int) *RequestRecord { return &batch[j].Record }, costs).args)
}
