package gatewaytest

import (
	"strings"

	"github.com/shopspring/decimal"
)

// genCatalog: one model per upstream kind serving every text family, plus models that exercise
// fallback, limits, streaming off, verified parameters and timeouts.
const genCatalog = `{
  "currency": "RUB",
  "families": [{"id": "fam"}],
  "providers": [
    {"id": "up-openai", "kind": "openai", "base_url": "{{UP}}/v1", "api_key_env": "UP_KEY"},
    {"id": "up-anthropic", "kind": "anthropic", "base_url": "{{UP}}", "api_key_env": "UP_KEY"},
    {"id": "up-gemini", "kind": "gemini", "base_url": "{{UP}}", "api_key_env": "UP_KEY"},
    {"id": "dead", "kind": "openai", "base_url": "http://127.0.0.1:1/v1", "api_key_env": "UP_KEY"},
    {"id": "slow", "kind": "openai", "base_url": "{{UP}}/v1", "api_key_env": "UP_KEY", "timeout": {"first_byte": "2s", "idle": "2s"}}
  ],
  "models": [
    {"id": "m-openai", "family": "fam", "routes": [{"endpoint_families": {{TEXT}}, "provider": "up-openai", "upstream_model": "up-gpt"}],
     "prices": [{"endpoint_families": {{PRICED}}, "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "m-anthropic", "family": "fam", "routes": [{"endpoint_families": {{TEXT}}, "provider": "up-anthropic", "upstream_model": "up-claude"}],
     "prices": [{"endpoint_families": {{PRICED}}, "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "m-gemini", "family": "fam", "routes": [{"endpoint_families": {{TEXT}}, "provider": "up-gemini", "upstream_model": "up-gemini"}],
     "prices": [{"endpoint_families": {{PRICED}}, "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "m-fallback", "family": "fam", "routes": [
       {"endpoint_families": ["chat.completions"], "provider": "dead", "upstream_model": "x"},
       {"endpoint_families": ["chat.completions"], "provider": "up-openai", "upstream_model": "up-gpt"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "m-nostream", "family": "fam", "streaming": false, "routes": [{"endpoint_families": ["chat.completions"], "provider": "up-openai"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "m-limited", "family": "fam", "output_token_limit": 100, "routes": [{"endpoint_families": {{TEXT}}, "provider": "up-anthropic"}],
     "prices": [{"endpoint_families": {{PRICED}}, "billing_mode": "per_token", "input": "1", "output": "2"}]},
    {"id": "m-capable", "family": "fam", "routes": [{"endpoint_families": ["chat.completions"], "provider": "up-openai"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1", "output": "2"}],
     "capabilities": [{"endpoint_family": "chat.completions", "optional_parameters": ["temperature", "max_tokens", "stream"], "verified_at": "2026-11-01T00:00:00Z"}]},
    {"id": "m-money", "family": "fam", "routes": [{"endpoint_families": ["chat.completions", "responses"], "provider": "up-openai", "upstream_model": "up-gpt"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "0", "output": "1000"}]},
    {"id": "m-slow", "family": "fam", "routes": [{"endpoint_families": ["chat.completions"], "provider": "slow", "upstream_model": "up-gpt"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1", "output": "2"}]}
  ]
}`

const textFamilies = `["chat.completions", "completions", "responses", "responses.compact", "messages", "messages.count_tokens", "content.generate", "content.count_tokens"]`
const pricedFamilies = `["chat.completions", "completions", "responses", "responses.compact", "messages", "content.generate"]`

// GenCatalog is the generation tests' catalogue with its providers at the upstream upURL
// (StartUpstream's URL).
func GenCatalog(upURL string) string {
	return strings.NewReplacer("{{UP}}", upURL, "{{TEXT}}", textFamilies, "{{PRICED}}", pricedFamilies).Replace(genCatalog)
}

// MoneyBody asks m-money for an answer that costs exactly MoneyCost: output at 1000 per 1M
// tokens, input free; the simulator answers 12 words, so a request with max_tokens 12 costs
// exactly 0.012 and its hold is exactly 0.012.
const MoneyBody = `{"model":"m-money","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}`

// MoneyCost is what MoneyBody is charged.
var MoneyCost = decimal.RequireFromString("0.012")
