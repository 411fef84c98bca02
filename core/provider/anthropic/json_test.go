package anthropic

import (
	"encoding/json"
	"testing"
)

var documentSeeds = []string{
	`{}`, ` [ ] `, `{"a":[1,-0.5e+3,true,false,null,"x\u00e9\n",{"b":{}}]}`, `"s"`, `-0`, `1E5`,
	`{"a":1,}`, `[1 2]`, `{"a" 1}`, `01`, `1.`, `-`, `.5`, `1e`, `tru`, `nul`, `"\x"`, "\"\x01\"",
	`{"a":1}}`, `[`, `{"a":{"b":[}]}`, "\"\xff\"",
}

// readDocument accepts exactly what encoding/json accepts.
func TestReadDocumentAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	t.Parallel()
	for _, s := range documentSeeds {
		if _, ok := readDocument([]byte(s)); ok != json.Valid([]byte(s)) {
			t.Errorf("%q: read %v, encoding/json valid %v", s, ok, !ok)
		}
	}
}

func FuzzReadDocument(f *testing.F) {
	for _, s := range append(documentSeeds, fastEventSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, ok := readDocument(data); ok != json.Valid(data) {
			t.Fatalf("%q: read %v, encoding/json valid %v", data, ok, !ok)
		}
	})
}
