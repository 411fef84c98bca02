package admin

import (
	"fmt"
	"os"
	"sort"

	"modelgateway/core/catalog"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// UnsetCredentials names the active providers whose api_key_env is not set in env (os.Getenv
// when nil): every request routed to them would fail upstream (401, shown as a 502), so the
// operator hears about it when the catalogue is applied and when a replica starts, not from a
// client later.
func UnsetCredentials(providers []store.Provider, env func(string) string) []string {
	if env == nil {
		env = os.Getenv
	}
	var out []string
	for _, p := range providers {
		if !p.Active {
			continue
		}
		// Every credential of a pool is checked: an unset one fails each request it is
		// chosen for before the next is tried.
		for _, name := range p.KeyEnvs() {
			if _, own := catalog.GatewayEnv(name); own {
				// Stored before the catalogue refused such names: routing sends it no key.
				out = append(out, fmt.Sprintf("provider %s (%s): %s is a variable the gateway itself reads, so it is sent no key; apply the catalogue with a variable of its own", p.ID, p.Kind, name))
				continue
			}
			if env(name) == "" {
				out = append(out, fmt.Sprintf("provider %s (%s): %s is not set in this replica's environment; requests routed to it will fail upstream", p.ID, p.Kind, name))
			}
		}
	}
	return out
}

// SnapshotCredentials is UnsetCredentials for the providers of a loaded catalogue, in id order.
func SnapshotCredentials(snap *snapshot.Snapshot, env func(string) string) []string {
	providers := make([]store.Provider, 0, len(snap.Providers))
	for _, p := range snap.Providers {
		providers = append(providers, *p)
	}
	sort.Slice(providers, func(i, j int) bool { return providers[i].ID < providers[j].ID })
	return UnsetCredentials(providers, env)
}
