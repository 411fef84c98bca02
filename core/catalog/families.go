package catalog

import "slices"

// EndpointFamilies are the endpoint family identifiers of contract.md, in the order of its
// table. Keys, routes, prices and capabilities all name families by these strings, so they
// are part of the external contract: extend, never rename.
var EndpointFamilies = []string{
	"chat.completions",
	"completions",
	"responses",
	"responses.compact",
	"messages",
	"messages.count_tokens",
	"content.generate",
	"content.count_tokens",
	"content.embed",
	"embeddings",
	"rerank",
	"moderations",
	"images.generations",
	"images.edits",
	"images.variations",
	"audio.speech",
	"audio.transcriptions",
	"audio.translations",
	"realtime",
	"files",
	"batches",
	"messages.batches",
}

// IsEndpointFamily reports whether s is one of EndpointFamilies.
func IsEndpointFamily(s string) bool { return slices.Contains(EndpointFamilies, s) }

// IsCountTokensFamily reports whether s only counts tokens. Counting generates nothing and
// costs nothing, so a route to such a family needs no price (contract.md).
func IsCountTokensFamily(s string) bool {
	return s == "messages.count_tokens" || s == "content.count_tokens"
}

// OptionalParameters are the canonical parameter names of spec.md 2.6, in table order.
// Capabilities record which of them were verified; protocol adapters map native
// spellings (max_output_tokens, stop_sequences, ...) onto these.
var OptionalParameters = []string{
	"temperature",
	"top_p",
	"max_tokens",
	"frequency_penalty",
	"presence_penalty",
	"stop",
	"seed",
	"n",
	"stream",
	"response_format",
	"tools",
	"tool_choice",
	"logprobs",
	"top_logprobs",
	"logit_bias",
	"user",
}

// IsOptionalParameter reports whether s is one of OptionalParameters.
func IsOptionalParameter(s string) bool { return slices.Contains(OptionalParameters, s) }

// ProviderKinds are the upstream protocols a provider can speak. "simulator" is the
// built-in upstream used by `make run` when no real credentials are set, so it needs no key.
var ProviderKinds = []string{"openai", "anthropic", "gemini", "rerank", "simulator"}

// KindSimulator is the provider kind that needs no credentials.
const KindSimulator = "simulator"

// Currencies are the billing currencies spec.md 2.2 allows.
var Currencies = []string{"RUB", "USD", "EUR", "CNY"}

// Billing modes of a price set.
const (
	BillingPerToken   = "per_token"   // amounts per 1M tokens of each category
	BillingPerRequest = "per_request" // one fixed amount per request
)

// BillingModes lists the billing modes a price set may use.
var BillingModes = []string{BillingPerToken, BillingPerRequest}
