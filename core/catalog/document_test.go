package catalog

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t *testing.T, data []byte) *Document {
	t.Helper()
	d, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return d
}

func dec(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}

func TestParseExampleFromYAMLAndJSONIsTheSame(t *testing.T) {
	fromYAML := mustParse(t, readFile(t, "testdata/catalog.yaml"))
	fromJSON := mustParse(t, readFile(t, "testdata/catalog.json"))
	if !reflect.DeepEqual(fromYAML, fromJSON) {
		t.Fatalf("YAML and JSON forms differ:\nYAML: %+v\nJSON: %+v", fromYAML, fromJSON)
	}

	d := fromYAML
	if d.Currency != "RUB" || d.Prune {
		t.Errorf("currency, prune = %q, %v; want RUB, false", d.Currency, d.Prune)
	}
	if want := []Family{{"gpt"}, {"claude"}}; !reflect.DeepEqual(d.Families, want) {
		t.Errorf("families = %v, want %v", d.Families, want)
	}
	wantProviders := []Provider{
		{ID: "main-openai", Kind: "openai", BaseURL: "http://127.0.0.1:9001/v1", APIKeyEnv: "OPENAI_API_KEY",
			FirstByteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second},
		{ID: "main-anthropic", Kind: "anthropic", BaseURL: "https://api.anthropic.example", APIKeyEnv: "ANTHROPIC_API_KEY"},
	}
	if !reflect.DeepEqual(d.Providers, wantProviders) {
		t.Errorf("providers = %+v\nwant %+v", d.Providers, wantProviders)
	}

	limit := 16384
	wantModels := []Model{
		{
			ID: "gpt-4o-mini", DisplayName: "GPT-4o mini", Family: "gpt", OwnedBy: "openai",
			Priority: 10, Active: true, OutputTokenLimit: &limit, Streaming: true,
			Routes: []Route{{
				EndpointFamilies: []string{"chat.completions", "responses", "messages", "content.generate"},
				Provider:         "main-openai", UpstreamModel: "gpt-4o-mini",
			}},
			Prices: []Price{
				{
					EndpointFamilies: []string{"chat.completions", "responses", "messages", "content.generate"},
					BillingMode:      BillingPerToken,
					Input:            dec("15"), CachedInput: dec("7.5"), Output: dec("60"),
				},
				{EndpointFamilies: []string{"images.generations"}, BillingMode: BillingPerRequest, Request: dec("3")},
			},
			Capabilities: []Capability{{
				EndpointFamily:     "chat.completions",
				OptionalParameters: []string{"temperature", "top_p", "max_tokens", "stop", "tools", "tool_choice", "stream"},
				VerifiedAt:         time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
			}},
		},
		{
			ID: "claude-sonnet", DisplayName: "Claude Sonnet", Family: "claude", OwnedBy: "anthropic",
			Priority: 5, Active: true, Streaming: true,
			Routes: []Route{
				{EndpointFamilies: []string{"messages", "messages.count_tokens", "chat.completions"}, Provider: "main-anthropic", UpstreamModel: "claude-sonnet"},
				{EndpointFamilies: []string{"messages"}, Provider: "main-openai", UpstreamModel: "claude-sonnet-via-openai"},
			},
			Prices: []Price{
				{
					EndpointFamilies: []string{"messages", "chat.completions"}, BillingMode: BillingPerToken,
					Input: dec("0.000000001"), Output: dec("123456789012345.123456789"),
				},
				{EndpointFamilies: []string{"rerank"}, BillingMode: BillingPerRequest, Request: dec("0.25")},
			},
			Capabilities: []Capability{{
				EndpointFamily:     "messages",
				OptionalParameters: []string{},
				VerifiedAt:         time.Date(2026, 10, 15, 9, 30, 0, 0, time.UTC),
			}},
		},
	}
	if !reflect.DeepEqual(d.Models, wantModels) {
		t.Errorf("models = %+v\nwant %+v", d.Models, wantModels)
	}
}

func TestJSONRoundTripsToAnEqualDocument(t *testing.T) {
	for _, name := range []string{"testdata/catalog.yaml", "testdata/catalog.json", "testdata/edge_cases.yaml"} {
		t.Run(name, func(t *testing.T) {
			d := mustParse(t, readFile(t, name))
			out, err := d.JSON()
			if err != nil {
				t.Fatal(err)
			}
			again := mustParse(t, out)
			if !reflect.DeepEqual(d, again) {
				t.Fatalf("round trip changed the document\nbefore: %+v\nafter:  %+v\nJSON:\n%s", d, again, out)
			}
			// Canonical means stable: rendering the re-parsed document changes nothing.
			if out2, _ := again.JSON(); string(out2) != string(out) {
				t.Fatalf("second rendering differs:\n%s\n---\n%s", out, out2)
			}
		})
	}
}

func TestJSONRendersAmountsAsStringsNullsAndShortDurations(t *testing.T) {
	d := mustParse(t, []byte(`
providers:
  - {id: sim, kind: simulator, timeout: {first_byte: 1m, idle: 1500ms}}
models:
  - id: m
    family: f
    routes: [{endpoint_families: [embeddings], provider: sim}]
    prices: [{endpoint_families: [embeddings], billing_mode: per_token, input: 0.10}]
`))
	out, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "prune": false,
  "families": [],
  "providers": [
    {
      "id": "sim",
      "kind": "simulator",
      "timeout": {
        "first_byte": "60s",
        "idle": "1500ms"
      }
    }
  ],
  "models": [
    {
      "id": "m",
      "display_name": "",
      "family": "f",
      "owned_by": "",
      "priority": 0,
      "active": true,
      "output_token_limit": null,
      "streaming": true,
      "routes": [
        {
          "endpoint_families": [
            "embeddings"
          ],
          "provider": "sim",
          "upstream_model": "m"
        }
      ],
      "prices": [
        {
          "endpoint_families": [
            "embeddings"
          ],
          "billing_mode": "per_token",
          "input": "0.1",
          "cached_input": null,
          "cache_write": null,
          "output": null,
          "request": null
        }
      ],
      "capabilities": []
    }
  ]
}
`
	if string(out) != want {
		t.Errorf("JSON() =\n%s\nwant\n%s", out, want)
	}
}

func TestAmountsAreExact(t *testing.T) {
	tests := []struct {
		literal string
		want    string // canonical decimal string
	}{
		{"0.000000001", "0.000000001"},
		{"123456789012345.123456789", "123456789012345.123456789"},
		{"1000000000000000", "1000000000000000"}, // 10^15 itself is allowed
		{"0.1", "0.1"},
		{"15.00", "15"},
		{"0", "0"},
		{"1e-9", "0.000000001"},
		{"2.5E+3", "2500"},
		{"1.5000000000000", "1.5"}, // trailing zeros beyond 9 digits change nothing
	}
	forms := map[string]string{
		"YAML bare":   "models: [{id: m, family: f, prices: [{endpoint_families: [embeddings], billing_mode: per_token, input: %s}]}]",
		"YAML quoted": "models: [{id: m, family: f, prices: [{endpoint_families: [embeddings], billing_mode: per_token, input: \"%s\"}]}]",
		"JSON bare":   `{"models": [{"id": "m", "family": "f", "prices": [{"endpoint_families": ["embeddings"], "billing_mode": "per_token", "input": %s}]}]}`,
		"JSON string": `{"models": [{"id": "m", "family": "f", "prices": [{"endpoint_families": ["embeddings"], "billing_mode": "per_token", "input": "%s"}]}]}`,
	}
	for _, tt := range tests {
		for form, tmpl := range forms {
			t.Run(form+" "+tt.literal, func(t *testing.T) {
				d := mustParse(t, []byte(strings.Replace(tmpl, "%s", tt.literal, 1)))
				got := d.Models[0].Prices[0].Input
				if got == nil || got.String() != tt.want {
					t.Fatalf("input = %v, want %s", got, tt.want)
				}
			})
		}
	}
}

// TestParseRejects has one case per rule; each asserts the complete list of problems, so
// that a rule that fires twice or drags others along fails too.
func TestParseRejects(t *testing.T) {
	const provider = `{id: p, kind: openai, base_url: "http://127.0.0.1:9001/v1", api_key_env: OPENAI_API_KEY`
	// model wraps model fields into a document with one valid model before it, so that
	// paths show the model's index (1).
	model := func(fields string) string {
		return "models:\n  - {id: ok, family: f}\n  - {id: m, family: f, " + fields + "}\n"
	}
	tests := []struct {
		name string
		in   string
		want []string
	}{
		// Document shape.
		{"an empty document is refused", ``,
			[]string{"document: is empty"}},
		{"a document that is not a mapping is refused", `[1, 2]`,
			[]string{"document: must be a mapping, not a list"}},
		{"a second YAML document is refused rather than ignored", "currency: RUB\n---\ncurrency: USD\n",
			[]string{"document: holds more than one YAML document; apply them one by one"}},
		{"an unknown top-level field is refused", "currency: RUB\ncolour: blue\n",
			[]string{"colour: unknown field"}},
		{"an unknown nested field is refused with its path", "providers: [" + provider + `, secret: sk-1}]`,
			[]string{"providers[0].secret: unknown field"}},
		{"a key given twice is refused", `families: [{id: a, id: b}]`,
			[]string{"families[0].id: appears more than once"}},
		{"a list field given a mapping is refused", model(`routes: {provider: p}`),
			[]string{"models[1].routes: must be a list, not a mapping"}},
		{"an anchor that contains itself is refused", "families: &a [{id: *a}]\n",
			[]string{"document: expands to more than 1048576 nodes through anchors and aliases"}},

		// Top level.
		{"currency must be a known currency", `currency: GBP`,
			[]string{`currency: "GBP" is not one of RUB, USD, EUR, CNY`}},
		{"prune must be a boolean", `prune: "yes"`,
			[]string{`prune: must be true or false, not "yes"`}},

		// Families.
		{"a family id is required", `families: [{id: gpt}, {}]`,
			[]string{"families[1].id: is required"}},
		{"family ids are unique", `families: [{id: gpt}, {id: gpt}]`,
			[]string{`families[1].id: "gpt" duplicates families[0].id`}},

		// Providers.
		{"provider ids are unique", "providers: [" + provider + "}, " + provider + "}]",
			[]string{`providers[1].id: "p" duplicates providers[0].id`}},
		{"provider kind must be a known kind", `providers: [{id: p, kind: foo, base_url: "http://h/v1", api_key_env: K}]`,
			[]string{`providers[0].kind: "foo" is not one of openai, anthropic, gemini, rerank, simulator`}},
		{"provider kind is required", `providers: [{id: p, base_url: "http://h/v1", api_key_env: K}]`,
			[]string{`providers[0].kind: is required`}},
		{"base_url is required for a real upstream", `providers: [{id: p, kind: gemini, api_key_env: K}]`,
			[]string{`providers[0].base_url: is required`}},
		{"base_url must be an absolute URL", `providers: [{id: p, kind: openai, base_url: "127.0.0.1:9001/v1", api_key_env: K}]`,
			[]string{`providers[0].base_url: "127.0.0.1:9001/v1" is not an absolute http(s) URL`}},
		{"base_url must be http or https", `providers: [{id: p, kind: openai, base_url: "ftp://h/v1", api_key_env: K}]`,
			[]string{`providers[0].base_url: "ftp://h/v1" is not an absolute http(s) URL`}},
		{"base_url must not carry credentials", `providers: [{id: p, kind: openai, base_url: "https://u:pw@h/v1", api_key_env: K}]`,
			[]string{`providers[0].base_url: "https://u:pw@h/v1" must not contain credentials; name them in api_key_env`}},
		{"base_url must not have a query", `providers: [{id: p, kind: openai, base_url: "https://h/v1?x=1", api_key_env: K}]`,
			[]string{`providers[0].base_url: "https://h/v1?x=1" must not have a query or fragment`}},
		{"api_key_env is required unless the provider is the simulator", `providers: [{id: p, kind: rerank, base_url: "https://h/v1"}]`,
			[]string{`providers[0].api_key_env: is required (the name of the environment variable holding the key)`}},
		{"api_key_env must be an environment variable name", `providers: [{id: p, kind: openai, base_url: "https://h/v1", api_key_env: sk-123}]`,
			[]string{`providers[0].api_key_env: "sk-123" is not an environment variable name`}},
		{"api_key_env must not name the gateway's admin token", `providers: [{id: evil, kind: openai, base_url: "https://h/v1", api_key_env: GATEWAY_ADMIN_TOKEN}]`,
			[]string{`providers[0].api_key_env: "GATEWAY_ADMIN_TOKEN" of provider "evil" is a variable the gateway itself reads (GATEWAY_*), and its value would be sent to the provider; name a variable that holds only this provider's key`}},
		{"api_key_env must not name the database URL", `providers: [{id: p, kind: anthropic, base_url: "https://h", api_key_env: DATABASE_URL}]`,
			[]string{`providers[0].api_key_env: "DATABASE_URL" of provider "p" is a variable the gateway itself reads (DATABASE_URL), and its value would be sent to the provider; name a variable that holds only this provider's key`}},
		{"api_key_env must not name a libpq variable, in any case", `providers: [{id: p, kind: gemini, base_url: "https://h", api_key_env: pgpassword}]`,
			[]string{`providers[0].api_key_env: "pgpassword" of provider "p" is a variable the gateway itself reads (PG*), and its value would be sent to the provider; name a variable that holds only this provider's key`}},
		{"api_key_env must not name a gateway variable even for the simulator", `providers: [{id: p, kind: simulator, api_key_env: TELEGRAM_BOT_TOKEN}]`,
			[]string{`providers[0].api_key_env: "TELEGRAM_BOT_TOKEN" of provider "p" is a variable the gateway itself reads (TELEGRAM_*), and its value would be sent to the provider; name a variable that holds only this provider's key`}},
		{"every credential of a pool is refused when the gateway reads it", `providers: [{id: p, kind: openai, base_url: "https://h/v1", api_key_env: [KEY_A, GATEWAY_ADMIN_TOKEN, DATABASE_URL]}]`,
			[]string{
				`providers[0].api_key_env[1]: "GATEWAY_ADMIN_TOKEN" of provider "p" is a variable the gateway itself reads (GATEWAY_*), and its value would be sent to the provider; name a variable that holds only this provider's key`,
				`providers[0].api_key_env[2]: "DATABASE_URL" of provider "p" is a variable the gateway itself reads (DATABASE_URL), and its value would be sent to the provider; name a variable that holds only this provider's key`,
			}},
		{"a pool names variables, each once", `providers: [{id: p, kind: openai, base_url: "https://h/v1", api_key_env: [KEY_A, sk-1, KEY_A]}]`,
			[]string{`providers[0].api_key_env[1]: "sk-1" is not an environment variable name`, `providers[0].api_key_env[2]: "KEY_A" is listed twice`}},
		{"a pool is not empty", `providers: [{id: p, kind: openai, base_url: "https://h/v1", api_key_env: []}]`,
			[]string{`providers[0].api_key_env: must name at least one variable`}},
		{"retry attempts are at least one", "providers: [" + provider + `, retry: {attempts: 0}}]`,
			[]string{`providers[0].retry.attempts: 0 must be between 1 and 10`}},
		{"retry knows only attempts and backoff", "providers: [" + provider + `, retry: {times: 2}}]`,
			[]string{`providers[0].retry.times: unknown field`}},
		{"a cooldown is a positive duration", "providers: [" + provider + `, cooldown: 0s}]`,
			[]string{`providers[0].cooldown: "0s" must be positive`}},
		{"a route's weight is at least one", model(`routes: [{endpoint_families: [chat.completions], provider: p, weight: 0}]`),
			[]string{`models[1].routes[0].weight: 0 must be between 1 and 10000`}},
		{"a route's priority is an integer", model(`routes: [{endpoint_families: [chat.completions], provider: p, priority: first}]`),
			[]string{`models[1].routes[0].priority: must be an integer, not "first"`}},
		{"a timeout must be a Go duration", "providers: [" + provider + `, timeout: {first_byte: 60}}]`,
			[]string{`providers[0].timeout.first_byte: "60" is not a duration (write it like "60s")`}},
		{"a timeout must be positive", "providers: [" + provider + `, timeout: {idle: 0s}}]`,
			[]string{`providers[0].timeout.idle: "0s" must be positive`}},
		{"a timeout is kept in whole milliseconds", "providers: [" + provider + `, timeout: {idle: 1500us}}]`,
			[]string{`providers[0].timeout.idle: 1.5ms must be a whole number of milliseconds`}},
		{"timeout knows only first_byte and idle", "providers: [" + provider + `, timeout: {connect: 5s}}]`,
			[]string{`providers[0].timeout.connect: unknown field`}},

		// Models.
		{"a model id is required", "models: [{family: f}]",
			[]string{"models[0].id: is required"}},
		{"model ids are unique", "models: [{id: m, family: f}, {id: m, family: f}]",
			[]string{`models[1].id: "m" duplicates models[0].id`}},
		{"a model id has no whitespace", "models: [{id: 'gpt 4', family: f}]",
			[]string{`models[0].id: "gpt 4" must not contain whitespace or control characters`}},
		{"a model family is required", "models: [{id: m}]",
			[]string{"models[0].family: is required"}},
		{"priority must be an integer", model(`priority: high`),
			[]string{`models[1].priority: must be an integer, not "high"`}},
		{"priority must fit the database column", model(`priority: 3000000000`),
			[]string{`models[1].priority: 3000000000 is out of range (32-bit integer)`}},
		{"active must be a boolean", model(`active: "false"`),
			[]string{`models[1].active: must be true or false, not "false"`}},
		{"output_token_limit must be positive", model(`output_token_limit: 0`),
			[]string{`models[1].output_token_limit: 0 must be positive`}},

		// Routes.
		{"a route names at least one endpoint family", model(`routes: [{endpoint_families: [], provider: p}]`),
			[]string{`models[1].routes[0].endpoint_families: must name at least one endpoint family`}},
		{"a route's endpoint families must be known", model(`routes: [{endpoint_families: [chat.completions, chat], provider: p}]`),
			[]string{`models[1].routes[0].endpoint_families[1]: "chat" is not an endpoint family; known: ` + strings.Join(EndpointFamilies, ", ")}},
		{"a route lists a family once", model(`routes: [{endpoint_families: [messages, messages], provider: p}]`),
			[]string{`models[1].routes[0].endpoint_families[1]: "messages" is listed twice`}},
		{"a route names its provider", model(`routes: [{endpoint_families: [messages]}]`),
			[]string{`models[1].routes[0].provider: is required`}},

		// Prices.
		{"a price set's endpoint families must be known", model(`prices: [{endpoint_families: [image.generations], billing_mode: per_request, request: 1}]`),
			[]string{`models[1].prices[0].endpoint_families[0]: "image.generations" is not an endpoint family; known: ` + strings.Join(EndpointFamilies, ", ")}},
		{"a family is priced by one price set only, reported at the second", model(`prices: [
			{endpoint_families: [chat.completions, responses], billing_mode: per_token, input: 1},
			{endpoint_families: [embeddings, responses], billing_mode: per_token, input: 2}]`),
			[]string{`models[1].prices[1].endpoint_families[1]: "responses" is already priced by models[1].prices[0]`}},
		{"billing_mode is required", model(`prices: [{endpoint_families: [embeddings], input: 1}]`),
			[]string{`models[1].prices[0].billing_mode: is required`}},
		{"billing_mode must be known", model(`prices: [{endpoint_families: [embeddings], billing_mode: per_second, input: 1}]`),
			[]string{`models[1].prices[0].billing_mode: "per_second" is not one of per_token, per_request`}},
		{"per_token needs a token amount", model(`prices: [{endpoint_families: [embeddings], billing_mode: per_token, input: null}]`),
			[]string{`models[1].prices[0]: per_token needs at least one of input, cached_input, cache_write, output`}},
		{"per_token takes no request amount", model(`prices: [{endpoint_families: [embeddings], billing_mode: per_token, input: 1, request: 1}]`),
			[]string{`models[1].prices[0].request: must be null for per_token`}},
		{"per_request needs a request amount", model(`prices: [{endpoint_families: [images.edits], billing_mode: per_request}]`),
			[]string{`models[1].prices[0].request: is required for per_request`}},
		{"per_request takes no token amounts", model(`prices: [{endpoint_families: [images.edits], billing_mode: per_request, request: 1, output: 2}]`),
			[]string{`models[1].prices[0].output: must be null for per_request`}},
		{"an amount must be a decimal, and is reported once", model(`prices: [{endpoint_families: [embeddings], billing_mode: per_token, input: "1,5"}]`),
			[]string{`models[1].prices[0].input: "1,5" is not a decimal amount`}},
		{"an amount must not be a YAML float spelling", model(`prices: [{endpoint_families: [embeddings], billing_mode: per_token, input: .inf}]`),
			[]string{`models[1].prices[0].input: ".inf" is not a decimal amount`}},
		{"a batch_price_factor must not be negative", model(`batch_price_factor: "-0.5"`),
			[]string{`models[1].batch_price_factor: -0.5 must not be negative`}},
		{"a batch_price_factor is a decimal", model(`batch_price_factor: half`),
			[]string{`models[1].batch_price_factor: "half" is not a decimal amount`}},
		{"an amount must not be negative", model(`prices: [{endpoint_families: [embeddings], billing_mode: per_token, input: -0.5}]`),
			[]string{`models[1].prices[0].input: must not be negative`}},
		{"an amount has at most 9 fractional digits", model(`prices: [{endpoint_families: [embeddings], billing_mode: per_token, cached_input: 0.0000000001}]`),
			[]string{`models[1].prices[0].cached_input: has more than 9 fractional digits`}},
		{"an amount is at most 10^15", model(`prices: [{endpoint_families: [embeddings], billing_mode: per_token, output: "1000000000000000.000000001"}]`),
			[]string{`models[1].prices[0].output: exceeds 10^15`}},
		{"an amount is a scalar", model(`prices: [{endpoint_families: [embeddings], billing_mode: per_token, output: [1]}]`),
			[]string{`models[1].prices[0].output: must be a decimal amount, not a list`}},

		// Capabilities.
		{"a capability's endpoint family must be known", model(`capabilities: [{endpoint_family: chat, optional_parameters: [], verified_at: "2026-11-01T00:00:00Z"}]`),
			[]string{`models[1].capabilities[0].endpoint_family: "chat" is not an endpoint family; known: ` + strings.Join(EndpointFamilies, ", ")}},
		{"a family has one capability entry per model", model(`capabilities: [
			{endpoint_family: messages, optional_parameters: [], verified_at: "2026-11-01T00:00:00Z"},
			{endpoint_family: messages, optional_parameters: [stop], verified_at: "2026-11-02T00:00:00Z"}]`),
			[]string{`models[1].capabilities[1].endpoint_family: "messages" already has a capability entry at models[1].capabilities[0]`}},
		{"optional parameters must be canonical names", model(`capabilities: [{endpoint_family: messages, optional_parameters: [temperature, max_output_tokens], verified_at: "2026-11-01T00:00:00Z"}]`),
			[]string{`models[1].capabilities[0].optional_parameters[1]: "max_output_tokens" is not an optional parameter; known: ` + strings.Join(OptionalParameters, ", ")}},
		{"an optional parameter is listed once", model(`capabilities: [{endpoint_family: messages, optional_parameters: [stop, stop], verified_at: "2026-11-01T00:00:00Z"}]`),
			[]string{`models[1].capabilities[0].optional_parameters[1]: "stop" is listed twice`}},
		{"optional_parameters must be given, [] meaning none", model(`capabilities: [{endpoint_family: messages, verified_at: "2026-11-01T00:00:00Z"}]`),
			[]string{`models[1].capabilities[0].optional_parameters: is required: list the verified parameters, or [] if none is supported`}},
		{"verified_at is required", model(`capabilities: [{endpoint_family: messages, optional_parameters: []}]`),
			[]string{`models[1].capabilities[0].verified_at: is required`}},
		{"verified_at must be RFC 3339", model(`capabilities: [{endpoint_family: messages, optional_parameters: [], verified_at: "2026-11-01"}]`),
			[]string{`models[1].capabilities[0].verified_at: "2026-11-01" is not an RFC 3339 timestamp (write it like "2026-11-01T00:00:00Z")`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse succeeded, want problems %q; got %+v", tt.want, d)
			}
			verr, ok := errors.AsType[*ValidationError](err)
			if !ok {
				t.Fatalf("error %T %v is not a *ValidationError", err, err)
			}
			if !slices.Equal(verr.Problems, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(verr.Problems, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestParseRejectsSyntaxErrorsWithTheirLine(t *testing.T) {
	_, err := Parse([]byte("currency: RUB\nmodels: [\n"))
	verr, ok := errors.AsType[*ValidationError](err)
	if !ok || len(verr.Problems) != 1 || !strings.HasPrefix(verr.Problems[0], "document: is not valid YAML or JSON: line ") {
		t.Fatalf("got %v", err)
	}
}

func TestParseReportsEveryProblemAtOnce(t *testing.T) {
	_, err := Parse([]byte(`
currency: rub
providers:
  - {id: p, kind: openai, base_url: "http://h/v1"}
models:
  - id: m
    family: f
    colour: red
    prices:
      - {endpoint_families: [chat.completions], billing_mode: per_token, input: abc}
`))
	want := []string{
		// Decoding problems come first, in document order, then validation problems.
		`models[0].colour: unknown field`,
		`models[0].prices[0].input: "abc" is not a decimal amount`,
		`currency: "rub" is not one of RUB, USD, EUR, CNY`,
		`providers[0].api_key_env: is required (the name of the environment variable holding the key)`,
	}
	verr, ok := errors.AsType[*ValidationError](err)
	if !ok {
		t.Fatalf("got %T %v, want *ValidationError", err, err)
	}
	if !slices.Equal(verr.Problems, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("Error() = %q, want one problem per line", err.Error())
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		check func(t *testing.T, d *Document)
	}{
		{"an empty mapping is an empty document", `{}`, func(t *testing.T, d *Document) {
			if !reflect.DeepEqual(d, &Document{}) {
				t.Errorf("got %+v", d)
			}
		}},
		{"defaults fill active, streaming and upstream_model", `models: [{id: m, family: f, routes: [{endpoint_families: [messages], provider: p}]}]`,
			func(t *testing.T, d *Document) {
				m := d.Models[0]
				if !m.Active || !m.Streaming || m.OutputTokenLimit != nil || m.Routes[0].UpstreamModel != "m" {
					t.Errorf("got %+v", m)
				}
			}},
		{"explicit false overrides the defaults", `models: [{id: m, family: f, active: false, streaming: false}]`,
			func(t *testing.T, d *Document) {
				if m := d.Models[0]; m.Active || m.Streaming {
					t.Errorf("got %+v", m)
				}
			}},
		{"several routes with the same family are the fallback order", `models: [{id: m, family: f, routes: [
				{endpoint_families: [messages], provider: a},
				{endpoint_families: [messages], provider: b, upstream_model: m2}]}]`,
			func(t *testing.T, d *Document) {
				if r := d.Models[0].Routes; len(r) != 2 || r[0].Provider != "a" || r[1].Provider != "b" {
					t.Errorf("routes = %+v", r)
				}
			}},
		{"count-token families and routed families without a price are allowed", `models: [{id: m, family: f, routes: [
				{endpoint_families: [messages.count_tokens, content.count_tokens, messages], provider: p}]}]`, nil},
		{"the simulator needs neither base_url nor api_key_env", `providers: [{id: sim, kind: simulator}]`, nil},
		{"zero is a valid price", `models: [{id: m, family: f, prices: [{endpoint_families: [moderations], billing_mode: per_request, request: 0}]}]`, nil},
		{"null currency and null lists mean absent", `{currency: null, families: null, providers: null, models: null}`,
			func(t *testing.T, d *Document) {
				if !reflect.DeepEqual(d, &Document{}) {
					t.Errorf("got %+v", d)
				}
			}},
		{"numeric-looking ids need no quotes", `families: [{id: 2024}]`, func(t *testing.T, d *Document) {
			if d.Families[0].ID != "2024" {
				t.Errorf("id = %q", d.Families[0].ID)
			}
		}},
		{"verified_at keeps the instant and is returned in UTC", `models: [{id: m, family: f, capabilities: [
				{endpoint_family: messages, optional_parameters: [stop], verified_at: 2026-10-15T12:30:00.5+03:00}]}]`,
			func(t *testing.T, d *Document) {
				got := d.Models[0].Capabilities[0].VerifiedAt
				if want := time.Date(2026, 10, 15, 9, 30, 0, 5e8, time.UTC); got != want {
					t.Errorf("verified_at = %v, want %v", got, want)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustParse(t, []byte(tt.in))
			if tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}

func TestParseExpandsAnchorsAndMergeKeys(t *testing.T) {
	d := mustParse(t, []byte(`
models:
  - &base
    id: a
    family: f
    owned_by: openai
    prices: &std
      - {endpoint_families: [chat.completions], billing_mode: per_token, input: "1.5"}
  - <<: *base
    id: b
  - {id: c, family: f, prices: *std}
`))
	if len(d.Models) != 3 {
		t.Fatalf("models = %+v", d.Models)
	}
	for _, m := range d.Models {
		if m.Family != "f" || len(m.Prices) != 1 || m.Prices[0].Input.String() != "1.5" {
			t.Errorf("model %s = %+v", m.ID, m)
		}
	}
	if d.Models[1].ID != "b" || d.Models[1].OwnedBy != "openai" {
		t.Errorf("merged model = %+v, want id b owned by openai", d.Models[1])
	}
}

func TestReferencesListsUndeclaredFamiliesAndProviders(t *testing.T) {
	d := mustParse(t, []byte(`
families: [{id: gpt}]
providers: [{id: local, kind: simulator}]
models:
  - {id: a, family: gpt, routes: [{endpoint_families: [messages], provider: local}]}
  - {id: b, family: legacy, routes: [{endpoint_families: [messages], provider: old-openai}, {endpoint_families: [embeddings], provider: old-openai}]}
  - {id: c, family: legacy, routes: [{endpoint_families: [messages], provider: archive}]}
`))
	families, providers := d.References()
	if want := []string{"legacy"}; !slices.Equal(families, want) {
		t.Errorf("families = %q, want %q", families, want)
	}
	if want := []string{"archive", "old-openai"}; !slices.Equal(providers, want) {
		t.Errorf("providers = %q, want %q", providers, want)
	}

	if f, p := mustParse(t, readFile(t, "testdata/catalog.yaml")).References(); f != nil || p != nil {
		t.Errorf("self-contained example references %q, %q", f, p)
	}
}

// validDocument is a document built in code, as the admin API or tests may build one.
func validDocument() *Document {
	return &Document{
		Currency:  "USD",
		Families:  []Family{{ID: "gpt"}},
		Providers: []Provider{{ID: "p", Kind: "openai", BaseURL: "https://h/v1", APIKeyEnv: "K", IdleTimeout: 2 * time.Minute}},
		Models: []Model{{
			ID: "m", Family: "gpt", Active: true, Streaming: true,
			Routes: []Route{{EndpointFamilies: []string{"chat.completions"}, Provider: "p", UpstreamModel: "m"}},
			Prices: []Price{{EndpointFamilies: []string{"chat.completions"}, BillingMode: BillingPerToken, Input: dec("1.5")}},
		}},
	}
}

func TestValidateDocumentsBuiltInCode(t *testing.T) {
	if err := validDocument().Validate(); err != nil {
		t.Fatalf("valid document: %v", err)
	}
	huge := decimal.New(1, 1<<30)
	tiny := decimal.New(1, -(1 << 30))
	tests := []struct {
		name   string
		change func(d *Document)
		want   []string
	}{
		{"upstream_model is not defaulted outside Parse", func(d *Document) { d.Models[0].Routes[0].UpstreamModel = "" },
			[]string{"models[0].routes[0].upstream_model: is required"}},
		{"a negative timeout is refused", func(d *Document) { d.Providers[0].FirstByteTimeout = -time.Second },
			[]string{"providers[0].timeout.first_byte: -1s must be positive"}},
		{"an exponent far out of range is refused without expanding it", func(d *Document) { d.Models[0].Prices[0].Output = &huge },
			[]string{"models[0].prices[0].output: exceeds 10^15"}},
		{"a tiny exponent is refused without expanding it", func(d *Document) { d.Models[0].Prices[0].Output = &tiny },
			[]string{"models[0].prices[0].output: has more than 9 fractional digits"}},
		{"an output limit beyond the database column is refused", func(d *Document) { l := 1 << 31; d.Models[0].OutputTokenLimit = &l },
			[]string{"models[0].output_token_limit: 2147483648 is out of range (32-bit integer)"}},
		{"a capability without verified_at is refused", func(d *Document) {
			d.Models[0].Capabilities = []Capability{{EndpointFamily: "chat.completions"}}
		}, []string{"models[0].capabilities[0].verified_at: is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := validDocument()
			tt.change(d)
			verr, ok := errors.AsType[*ValidationError](d.Validate())
			if !ok {
				t.Fatalf("Validate() = %v, want *ValidationError", d.Validate())
			}
			if !slices.Equal(verr.Problems, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", verr, strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestJSONOfADocumentBuiltInCodeParsesBack(t *testing.T) {
	d := validDocument()
	d.Models[0].Capabilities = []Capability{{EndpointFamily: "messages", VerifiedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	out, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	again := mustParse(t, out)
	// A nil OptionalParameters is rendered as [] (none verified), which Parse returns as [].
	d.Models[0].Capabilities[0].OptionalParameters = []string{}
	if !reflect.DeepEqual(d, again) {
		t.Errorf("before: %+v\nafter:  %+v", d, again)
	}
}

func TestIsCountTokensFamily(t *testing.T) {
	var got []string
	for _, f := range EndpointFamilies {
		if IsCountTokensFamily(f) {
			got = append(got, f)
		}
	}
	if want := []string{"messages.count_tokens", "content.count_tokens"}; !slices.Equal(got, want) {
		t.Errorf("count-token families = %q, want %q", got, want)
	}
	if IsEndpointFamily("*") || !IsEndpointFamily("realtime") {
		t.Error("IsEndpointFamily disagrees with EndpointFamilies")
	}
}

// A provider's key is sent to the base_url the catalogue names, so a variable the gateway
// reads for itself must never be one: its value would leave with every request.
func TestGatewayEnvRefusesTheGatewaysOwnVariablesOnly(t *testing.T) {
	tests := []struct {
		name string
		own  bool
		rule string
	}{
		{"GATEWAY_ADMIN_TOKEN", true, "GATEWAY_*"},
		{"GATEWAY_DATABASE_URL", true, "GATEWAY_*"},
		{"GATEWAY_BOT_TOKEN", true, "GATEWAY_*"},
		{"GATEWAY_SIMULATOR_KEY", true, "GATEWAY_*"},
		{"gateway_admin_token", true, "GATEWAY_*"},
		{"DATABASE_URL", true, "DATABASE_URL"},
		{"TEST_DATABASE_URL", true, "TEST_DATABASE_URL"},
		{"PGPASSWORD", true, "PG*"},
		{"PGSSLKEY", true, "PG*"},
		{"TELEGRAM_BOT_TOKEN", true, "TELEGRAM_*"},
		{"TELEGRAM_PAYMENT_PROVIDER_TOKEN", true, "TELEGRAM_*"},
		{"OTEL_EXPORTER_OTLP_HEADERS", true, "OTEL_*"},
		{"PATH", true, "PATH"},
		{"HOME", true, "HOME"},
		{"HTTPS_PROXY", true, "HTTPS_PROXY"},
		{"http_proxy", true, "HTTP_PROXY"},
		{"GODEBUG", true, "GODEBUG"},

		{"OPENAI_API_KEY", false, ""},
		{"ANTHROPIC_API_KEY", false, ""},
		{"GOOGLE_API_KEY", false, ""}, // GO... is not the Go runtime's
		{"GEMINI_API_KEY", false, ""},
		{"SIMULATOR_API_KEY", false, ""},
		{"BENCH_UPSTREAM_KEY", false, ""},
		{"MY_GATEWAY_KEY", false, ""}, // the prefix, not a substring
		{"PATH_KEY", false, ""},
		{"HOMEGROWN_KEY", false, ""},
		{"K", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, own := GatewayEnv(tt.name)
			if own != tt.own || rule != tt.rule {
				t.Errorf("GatewayEnv(%q) = %q, %v; want %q, %v", tt.name, rule, own, tt.rule, tt.own)
			}
			doc := `providers: [{id: p, kind: openai, base_url: "https://h/v1", api_key_env: ` + tt.name + `}]`
			_, err := Parse([]byte(doc))
			if (err != nil) != tt.own {
				t.Errorf("Parse with api_key_env %s: %v, want refused %v", tt.name, err, tt.own)
			}
		})
	}
}

// The refusal names the variable, never its value: the value is the secret it protects.
func TestGatewayEnvRefusalNeverShowsTheValue(t *testing.T) {
	const secret = "adm-0123456789abcdef-secret"
	t.Setenv("GATEWAY_ADMIN_TOKEN", secret)
	_, err := Parse([]byte(`providers: [{id: p, kind: openai, base_url: "https://h/v1", api_key_env: GATEWAY_ADMIN_TOKEN}]`))
	if err == nil {
		t.Fatal("Parse accepted GATEWAY_ADMIN_TOKEN as api_key_env")
	}
	if msg := err.Error(); strings.Contains(msg, secret) || !strings.Contains(msg, "GATEWAY_ADMIN_TOKEN") || !strings.Contains(msg, `"p"`) {
		t.Errorf("error %q: want the variable and the provider named, and not its value", msg)
	}
}

// The routing fields (contract.md, "Routing") decode to what they say and render back to the
// same document; a provider without them keeps api_key_env a string and no pool.
func TestParseRoutingFields(t *testing.T) {
	doc, err := Parse([]byte(`
providers:
  - {id: pool, kind: openai, base_url: "https://h/v1", api_key_env: [KEY_A, KEY_B], retry: {attempts: 3, backoff: 250ms}, cooldown: 45s}
  - {id: one, kind: openai, base_url: "https://h/v1", api_key_env: KEY_C, retry: {attempts: 2}}
models:
  - id: m
    family: f
    routes:
      - {endpoint_families: [chat.completions], provider: pool, priority: 0, weight: 3}
      - {endpoint_families: [chat.completions], provider: one}
`))
	if err != nil {
		t.Fatal(err)
	}
	pool, one := doc.Providers[0], doc.Providers[1]
	if pool.APIKeyEnv != "KEY_A" || fmt.Sprint(pool.KeyEnvs()) != "[KEY_A KEY_B]" || *pool.Retry != (Retry{3, 250 * time.Millisecond}) || pool.Cooldown != 45*time.Second {
		t.Errorf("pool provider %+v", pool)
	}
	if one.APIKeyPool != nil || fmt.Sprint(one.KeyEnvs()) != "[KEY_C]" || *one.Retry != (Retry{Attempts: 2}) || one.Cooldown != 0 {
		t.Errorf("single provider %+v", one)
	}
	r0, r1 := doc.Models[0].Routes[0], doc.Models[0].Routes[1]
	if *r0.Priority != 0 || *r0.Weight != 3 || r1.Priority != nil || r1.Weight != nil {
		t.Errorf("routes %+v %+v", r0, r1)
	}
	out, err := doc.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"api_key_env": [`, `"api_key_env": "KEY_C"`, `"retry": {`, `"backoff": "250ms"`, `"cooldown": "45s"`, `"weight": 3`, `"priority": 0`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rendering lacks %s:\n%s", want, out)
		}
	}
	again, err := Parse(out)
	if err != nil || !reflect.DeepEqual(again, doc) {
		t.Errorf("Parse(JSON()) differs: %v\n%+v\n%+v", err, again, doc)
	}
}
