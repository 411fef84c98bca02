package bot

import (
	"strings"
	"testing"
)

// GATEWAY_BOT_KEY_LIMITS: the admin API's limit names with whole values; anything else stops
// FromEnv (and so the bot's start) with a message naming the variable and what is wrong.
func TestBotKeyLimitsFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  KeyLimits
		err   string
	}{
		{"", KeyLimits{}, ""},
		{"max_requests_per_second=5,max_concurrent_requests=4,max_tokens_per_minute=10000", KeyLimits{4, 5, 10000}, ""},
		{" max_tokens_per_minute = 7 , ", KeyLimits{MaxTokensPerMinute: 7}, ""},
		{"max_requests_per_second=0", KeyLimits{}, ""},
		{"max_rps=5", KeyLimits{}, `unknown limit "max_rps"`},
		{"max_requests_per_second", KeyLimits{}, "is not name=value"},
		{"max_requests_per_second=-1", KeyLimits{}, "not a whole number"},
		{"max_requests_per_second=2.5", KeyLimits{}, "not a whole number"},
		{"max_tokens_per_minute=99999999999", KeyLimits{}, "not a whole number"},
		{"max_concurrent_requests=1,max_concurrent_requests=2", KeyLimits{}, "given twice"},
	} {
		c, err := FromEnv(func(name string) string {
			switch name {
			case "TELEGRAM_BOT_TOKEN":
				return "t"
			case "GATEWAY_BOT_KEY_LIMITS":
				return tc.value
			}
			return ""
		})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), "GATEWAY_BOT_KEY_LIMITS") || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want one naming GATEWAY_BOT_KEY_LIMITS and %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || c.KeyLimits != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.value, c, err, tc.want)
		}
	}
}
