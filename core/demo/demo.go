// Package demo holds the catalogue that `make run` applies on a fresh machine.
package demo

import (
	_ "embed"
	"strings"
)

//go:embed catalog.yaml
var catalogYAML string

// Catalog returns the demo catalogue with its providers pointed at the simulator.
func Catalog(simulatorURL string) []byte {
	return []byte(strings.ReplaceAll(catalogYAML, "{{SIMULATOR}}", strings.TrimRight(simulatorURL, "/")))
}
