package bot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// KeyLimits are the limits of every key made through the bot (GATEWAY_BOT_KEY_LIMITS); zero
// is no limit.
type KeyLimits struct {
	MaxConcurrentRequests int32
	MaxRequestsPerSecond  int32
	MaxTokensPerMinute    int32
}

// keyLimitNames are the names GATEWAY_BOT_KEY_LIMITS takes: the admin API's field names.
var keyLimitNames = []string{"max_requests_per_second", "max_concurrent_requests", "max_tokens_per_minute"}

// parseKeyLimits reads `name=value,...` (e.g. max_requests_per_second=5,max_concurrent_requests=4);
// a name it does not know, a name given twice or a value that is not a whole number from 0 up
// is an error naming what is wrong, so that the bot refuses to start rather than hand out keys
// without the limits the operator meant.
func parseKeyLimits(s string) (KeyLimits, error) {
	var l KeyLimits
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok {
			return KeyLimits{}, fmt.Errorf("GATEWAY_BOT_KEY_LIMITS: %q is not name=value (names: %s)", part, strings.Join(keyLimitNames, ", "))
		}
		var dst *int32
		switch name {
		case "max_requests_per_second":
			dst = &l.MaxRequestsPerSecond
		case "max_concurrent_requests":
			dst = &l.MaxConcurrentRequests
		case "max_tokens_per_minute":
			dst = &l.MaxTokensPerMinute
		default:
			return KeyLimits{}, fmt.Errorf("GATEWAY_BOT_KEY_LIMITS: unknown limit %q (names: %s)", name, strings.Join(keyLimitNames, ", "))
		}
		if seen[name] {
			return KeyLimits{}, fmt.Errorf("GATEWAY_BOT_KEY_LIMITS: %s is given twice", name)
		}
		seen[name] = true
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil || n < 0 || n > math.MaxInt32 {
			return KeyLimits{}, fmt.Errorf("GATEWAY_BOT_KEY_LIMITS: %s=%q is not a whole number from 0 (no limit) up", name, value)
		}
		*dst = int32(n)
	}
	return l, nil
}
