package catalog

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no catalogue document, JSON or YAML, panics the parser, and one it accepts
// is a document. Seeds: testdata/ and the demo catalogue.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Parse(data)
		if (doc == nil) == (err == nil) {
			t.Fatalf("document %v and error %v", doc, err)
		}
	})
}
