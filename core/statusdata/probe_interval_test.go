package statusdata_test

import (
	"os"
	"testing"
	"time"

	"modelgateway/core/statusdata"
)

func TestProbeIntervalIsCheckedAtStart(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		bad   bool
	}{
		{"", 0, false},
		{"5m", 5 * time.Minute, false},
		{"5s", 0, true},
		{"often", 0, true},
	} {
		t.Setenv("GATEWAY_STATUS_PROBE_INTERVAL", tc.value)
		got, err := statusdata.ProbeIntervalFromEnv(os.Getenv)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%q: %v, %v; want %v, error %v", tc.value, got, err, tc.want, tc.bad)
		}
	}
}
