package fx

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/text/encoding/charmap"
)

// quote is the price of one unit of a currency in roubles, kept as the exact fraction
// Value/Nominal so that no precision is lost before the single rounding in crossRate.
type quote struct {
	value, nominal decimal.Decimal
}

// cbrDaily is the document of https://www.cbr.ru/scripts/XML_daily.asp: roubles per Nominal
// units of each currency, with comma decimal separators, in windows-1251.
type cbrDaily struct {
	XMLName xml.Name    `xml:"ValCurs"`
	Date    string      `xml:"Date,attr"`
	Valutes []cbrValute `xml:"Valute"`
}

type cbrValute struct {
	CharCode string `xml:"CharCode"`
	Nominal  string `xml:"Nominal"`
	Value    string `xml:"Value"`
}

// parseCBR reads a CBR daily document and returns its effective date and the rouble quotes of
// the wanted currencies. Every wanted currency must appear exactly once with a positive value:
// a partial snapshot would replace a complete one and null out prices, so it is an error.
// Currencies not wanted are ignored, whatever their content.
func parseCBR(r io.Reader, wanted []string) (time.Time, map[string]quote, error) {
	dec := xml.NewDecoder(r)
	dec.CharsetReader = charsetReader
	var doc cbrDaily
	if err := dec.Decode(&doc); err != nil {
		return time.Time{}, nil, fmt.Errorf("decode CBR document: %w", err)
	}
	date, err := time.Parse("02.01.2006", strings.TrimSpace(doc.Date))
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("CBR document date %q: %w", doc.Date, err)
	}
	want := map[string]bool{}
	for _, c := range wanted {
		want[c] = true
	}
	quotes := make(map[string]quote, len(wanted))
	for _, v := range doc.Valutes {
		code := strings.TrimSpace(v.CharCode)
		if !want[code] {
			continue
		}
		if _, dup := quotes[code]; dup {
			return time.Time{}, nil, fmt.Errorf("CBR document lists %s twice", code)
		}
		q, err := parseQuote(v)
		if err != nil {
			return time.Time{}, nil, fmt.Errorf("CBR %s: %w", code, err)
		}
		quotes[code] = q
	}
	for _, c := range wanted {
		if _, ok := quotes[c]; !ok {
			return time.Time{}, nil, fmt.Errorf("CBR document has no %s rate", c)
		}
	}
	return date, quotes, nil
}

func parseQuote(v cbrValute) (quote, error) {
	// CBR writes "81,2345"; a stray thousands space never appears but costs nothing to drop.
	value, err := decimal.NewFromString(strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(v.Value), " ", ""), ",", "."))
	if err != nil {
		return quote{}, fmt.Errorf("value %q: %w", v.Value, err)
	}
	nominal, err := decimal.NewFromString(strings.TrimSpace(v.Nominal))
	if err != nil {
		return quote{}, fmt.Errorf("nominal %q: %w", v.Nominal, err)
	}
	if !value.IsPositive() {
		return quote{}, fmt.Errorf("value %q is not positive", v.Value)
	}
	if !nominal.IsPositive() || !nominal.IsInteger() {
		return quote{}, fmt.Errorf("nominal %q is not a positive integer", v.Nominal)
	}
	return quote{value: value, nominal: nominal}, nil
}

// charsetReader decodes the encodings CBR has used; encoding/xml handles UTF-8 itself.
func charsetReader(label string, input io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "windows-1251", "cp1251", "x-cp1251":
		return charmap.Windows1251.NewDecoder().Reader(input), nil
	}
	return nil, fmt.Errorf("unsupported charset %q", label)
}
