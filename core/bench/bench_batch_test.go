package bench

import "testing"

// The batch scenario takes over a minute (two statsFlush waits, the batch, live requests for
// -duration on each side): -scenarios all and -scenarios batch run it, the default does not.
func TestBatchScenarioIsSelectedByName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want bool
	}{{defaultScenarios, false}, {"all", true}, {"batch", true}, {"passthrough,batch", true}, {"budget,routes,chain", false}} {
		set, err := parseScenarios(c.in)
		if err != nil {
			t.Fatalf("parseScenarios(%q): %v", c.in, err)
		}
		if set["batch"] != c.want {
			t.Errorf("-scenarios %s: batch selected %v, want %v", c.in, set["batch"], c.want)
		}
	}
}
