package billing

import (
	"fmt"
	"testing"

	"github.com/shopspring/decimal"

	"modelgateway/core/store"
)

// A batch's cost texts are the costs as Decimal.String writes them (the text the statement
// charges and the database echoes), none for an uncosted record, and past the first 64
// charges none (Settle writes those itself).
func TestCostTextsAreTheDecimalsText(t *testing.T) {
	costs := []string{"0.000123456", "", "12", "-0.5", "123456789012345678901234.5", "0", "", "7.000000001"}
	var batch []*charge
	for i := range 70 {
		c := &charge{}
		if s := costs[i%len(costs)]; s != "" {
			c.rec.Cost = decimal.NullDecimal{Decimal: decimal.RequireFromString(s), Valid: true}
		}
		batch = append(batch, c)
	}
	sts := make([]store.Settlement, len(batch))
	costTexts(batch, sts)
	for i, c := range batch {
		want := ""
		if c.rec.Cost.Valid && i < 64 {
			want = c.rec.Cost.Decimal.String()
		}
		if got := sts[i].CostText; got != want {
			t.Errorf("charge %d (%s): text %q, want %q", i, fmt.Sprint(c.rec.Cost), got, want)
		}
	}
	if sts[0].CostText == "" || !batch[64].rec.Cost.Valid || sts[64].CostText != "" {
		t.Fatal("the batch's first charge has no text, or one beyond 64 has")
	}
}
