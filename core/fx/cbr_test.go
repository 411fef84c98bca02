package fx

import (
	"strings"
	"testing"
)

const okValutes = `<Valute ID="R01235"><CharCode>USD</CharCode><Nominal>1</Nominal><Value>81,2345</Value></Valute>` +
	`<Valute ID="R01239"><CharCode>EUR</CharCode><Nominal>1</Nominal><Value>94,1234</Value></Valute>`

func TestParseCBRRejectsMalformedDocuments(t *testing.T) {
	t.Parallel()
	cny := `<Valute><CharCode>CNY</CharCode><Nominal>10</Nominal><Value>112,3456</Value></Valute>`
	tests := []struct {
		name, doc, wantErr string
	}{
		{"truncated document", `<ValCurs Date="21.11.2026">` + okValutes, "decode"},
		{"an HTML error page", `<html><body>Service unavailable</body></html>`, "decode"},
		{"not XML at all", `{"USD": 81.2}`, "decode"},
		{"missing date", `<ValCurs>` + okValutes + cny + `</ValCurs>`, "date"},
		{"ISO date instead of dd.mm.yyyy", `<ValCurs Date="2026-11-21">` + okValutes + cny + `</ValCurs>`, "date"},
		{"a wanted currency is missing", `<ValCurs Date="21.11.2026">` + okValutes + `</ValCurs>`, "no CNY"},
		{"a wanted currency appears twice", `<ValCurs Date="21.11.2026">` + okValutes + cny + cny + `</ValCurs>`, "twice"},
		{"zero nominal", `<ValCurs Date="21.11.2026">` + okValutes + strings.Replace(cny, "<Nominal>10<", "<Nominal>0<", 1) + `</ValCurs>`, "nominal"},
		{"fractional nominal", `<ValCurs Date="21.11.2026">` + okValutes + strings.Replace(cny, "<Nominal>10<", "<Nominal>1,5<", 1) + `</ValCurs>`, "nominal"},
		{"negative value", `<ValCurs Date="21.11.2026">` + okValutes + strings.Replace(cny, "112,3456", "-112,3456", 1) + `</ValCurs>`, "not positive"},
		{"value that is not a number", `<ValCurs Date="21.11.2026">` + okValutes + strings.Replace(cny, "112,3456", "n/a", 1) + `</ValCurs>`, "value"},
		{"empty value", `<ValCurs Date="21.11.2026">` + okValutes + strings.Replace(cny, "112,3456", "", 1) + `</ValCurs>`, "value"},
		{"unknown charset", `<?xml version="1.0" encoding="koi8-r"?><ValCurs Date="21.11.2026">` + okValutes + cny + `</ValCurs>`, "charset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := parseCBR(strings.NewReader(tt.doc), []string{"USD", "EUR", "CNY"})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseCBRIgnoresUnwantedCurrenciesWhateverTheirContent(t *testing.T) {
	t.Parallel()
	doc := `<ValCurs Date="21.11.2026">` + okValutes +
		`<Valute><CharCode>XDR</CharCode><Nominal>?</Nominal><Value>broken</Value></Valute></ValCurs>`
	_, quotes, err := parseCBR(strings.NewReader(doc), []string{"USD", "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	if len(quotes) != 2 {
		t.Errorf("quotes %v, want USD and EUR only", quotes)
	}
}
