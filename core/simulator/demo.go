package simulator

import (
	_ "embed"
	"strings"
)

//go:embed demo_catalog.yaml
var demoCatalogYAML string

// DemoCatalog returns the catalogue that `make run` applies on a fresh machine, with its
// providers pointed at a simulator serving at simulatorURL.
func DemoCatalog(simulatorURL string) []byte {
	return []byte(strings.ReplaceAll(demoCatalogYAML, "{{SIMULATOR}}", strings.TrimRight(simulatorURL, "/")))
}
