package store

import "github.com/google/uuid"

// SettleMessageBytes is the room lendBuffer gives a settlement of batch (settleMessageBytes),
// for TestSettleReusesItsConnectionsBuffer. Every record in it has a cost.
func SettleMessageBytes(batch []Settlement) int {
	costs := make([]string, len(batch))
	for i := range batch {
		costs[i] = batch[i].Record.Cost.Decimal.String()
	}
	return settleMessageBytes(settleArgs(arrayWriter{}, uuid.UUID{}, len(batch), func(j int) *RequestRecord { return &batch[j].Record }, costs).args)
}
