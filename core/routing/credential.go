package routing

import (
	"sync"
	"sync/atomic"

	"modelgateway/core/catalog"
	"modelgateway/core/provider"
)

// credential is what a provider's api_key_env costs once per name instead of once per
// upstream call: whether it names one of the gateway's own variables (fixed for a name) and
// the value last noted as a secret. The value itself is read on every call (a changed
// environment, a test's t.Setenv, takes effect at the next request), but only a value not
// seen last time takes NoteSecret's lock.
type credential struct {
	own   bool
	noted atomic.Pointer[string]
}

// credentials maps an api_key_env name to its *credential. Names come from the catalogue,
// so the map stays as small as the set of names ever configured.
var credentials sync.Map

// apiKey reads keyEnv's value with env and notes it as a secret when it is new; "" for a
// name the gateway reads itself.
func apiKey(env func(string) string, keyEnv string) string {
	c, ok := credentials.Load(keyEnv)
	if !ok {
		_, own := catalog.GatewayEnv(keyEnv)
		c, _ = credentials.LoadOrStore(keyEnv, &credential{own: own})
	}
	cred := c.(*credential)
	if cred.own {
		return ""
	}
	v := env(keyEnv)
	if p := cred.noted.Load(); p == nil || *p != v {
		provider.NoteSecret(v) // hidden from every upstream string from now on
		noted := v
		cred.noted.Store(&noted)
	}
	return v
}
