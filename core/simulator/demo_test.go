package simulator

import (
	"testing"

	"modelgateway/core/catalog"
)

// make run applies this catalogue at every start; a problem in it would stop make run.
// Its providers' key variable must be one the catalogue accepts: not a GATEWAY_* name.
func TestDemoCatalogParses(t *testing.T) {
	doc, err := catalog.Parse(DemoCatalog("http://127.0.0.1:1"))
	if err != nil {
		t.Fatalf("the demo catalogue does not parse: %v", err)
	}
	if len(doc.Providers) == 0 || len(doc.Models) == 0 {
		t.Fatalf("the demo catalogue has %d providers and %d models", len(doc.Providers), len(doc.Models))
	}
	pools := 0
	for _, p := range doc.Providers {
		if p.APIKeyEnv != KeyEnv {
			t.Errorf("provider %s: api_key_env %q, want %q (what make run sets)", p.ID, p.APIKeyEnv, KeyEnv)
		}
		for _, name := range p.KeyEnvs()[1:] {
			if name != RevokedKeyEnv {
				t.Errorf("provider %s: pool entry %q, want only %q beside %q (what make run sets)", p.ID, name, RevokedKeyEnv, KeyEnv)
			}
			pools++
		}
	}
	if pools == 0 {
		t.Error("the demo catalogue shows no credential pool")
	}
}
