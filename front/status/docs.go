package status

// The facts /docs shows that the README also states. They live here once; a test checks
// that the README agrees (README_test), so the two cannot drift apart silently.

// ErrorRow is one line of the error table: the spec's code, its HTTP status, when it happens.
type ErrorRow struct{ Code, HTTP, When string }

// Errors are the error codes of spec 7 (and contract.md's additions) with their HTTP statuses.
var Errors = []ErrorRow{
	{"invalid_key", "401", "the key is missing or not recognised"},
	{"model_not_found", "404", "the model is not in the key's catalogue"},
	{"model_not_allowed", "403", "the model is not enabled for the key"},
	{"endpoint_not_allowed", "403", "the key may not use this route"},
	{"invalid_request_error", "400", "wrong protocol or body, a missing or too large output limit"},
	{"insufficient_balance", "402", "the profile's balance cannot cover the request"},
	{"streaming_not_supported", "400", "streaming was asked where it is not served"},
	{"unsupported_content_type", "415", "wrong content type on a media route"},
	{"payload_too_large", "413", "the body is above the route's limit"},
	{"unsupported_prompt_shape", "400", "a prompt that is not a string on /v1/completions"},
	{"invalid_catalog_currency", "400", "an unsupported currency on /v1/catalog"},
	{"upstream_error", "502", "the model provider failed"},
	{"upstream_timeout", "504", "the model provider timed out"},
	{"pricing_unavailable", "403", "the model has no usable price for this route"},
	{"duplicate_request_id", "409", "the x-request-id was used before"},
	{"rate_limited", "429", "a per-key or per-replica limit refused the request; see retry-after"},
	{"budget_exceeded", "402", "what is left of the key's budget in its window cannot cover the request; the message says when it resets"},
	{"unavailable", "503", "the gateway cannot reach its database"},
}

// LimitRow is one body-size limit of spec 8.
type LimitRow struct{ Limit, Value, AppliesTo string }

// Limits are the body-size limits of spec 8.
var Limits = []LimitRow{
	{"Ordinary JSON body", "32 MiB", "generation, embeddings, ranking, moderation"},
	{"Content-generation JSON body", "20 MiB", "all /v1beta actions"},
	{"Image/audio JSON body", "1 MiB", "image generations, speech"},
	{"Image/audio multipart body", "25 MiB", "edits, variations, transcriptions, translations"},
}

// BillingRules are spec 8's billing rules.
var BillingRules = []string{
	"Successful measured usage, or a compatible fixed-price response, is charged once, after the response.",
	"Missing or contradictory usage is left uncharged and is never charged later.",
	"Token counting routes (/v1/messages/count_tokens, countTokens) are free and do not change the balance.",
	"Realtime charges only reliable terminal usage.",
	"Before the upstream call the balance must cover the worst case of the request; otherwise insufficient_balance, and nothing is charged.",
}

// BotCommand is one command of the chat bot (contract.md, "Chat bot").
type BotCommand struct{ Command, What string }

// BotCommands are the chat bot's commands for everyone.
var BotCommands = []BotCommand{
	{"/start", "create your profile and show the help"},
	{"/help", "list the commands"},
	{"/newkey [name]", "create a key; the secret is shown once, in that answer"},
	{"/keys", "list your keys (never their secrets)"},
	{"/revoke <key>", "revoke a key, by name or prefix"},
	{"/rotate <key>", "replace a key by a new one with the same policy"},
	{"/models", "the models you can use"},
	{"/balance", "your profile's balance"},
	{"/usage", "your recent requests and their cost"},
	{"/topup <amount>", "top up the balance"},
}

// AuthRow is one way to send the key (spec 5).
type AuthRow struct{ Mechanism, AppliesTo string }

// Auth are the ways to send the key.
var Auth = []AuthRow{
	{"Authorization: Bearer <API_KEY>", "all authenticated routes"},
	{"x-api-key: <API_KEY>", "all authenticated routes"},
	{"api-key: <API_KEY>", "all authenticated routes"},
	{"x-gen-api-key: <API_KEY> (or x-goog-api-key)", "content-generation (/v1beta) routes"},
	{"query parameter key=<API_KEY>", "content-generation (/v1beta) routes"},
}

// Quickstart is one protocol's quick start: its base URL, the key variable, and a snippet per
// official SDK and agent CLI.
type Quickstart struct {
	ID, Protocol, BaseURL, KeyVar, BaseVar string
	Snippets                               []Snippet
}

// Snippet is one client's quick start.
type Snippet struct{ Client, Lang, Code string }

// KeyVariable is the environment variable every quick start reads the key from, for each
// protocol's SDKs.
const (
	openAIKey    = "OPENAI_API_KEY"
	anthropicKey = "ANTHROPIC_API_KEY"
	geminiKey    = "GEMINI_API_KEY"
)

// quickstarts builds the quick starts for a base URL (without a trailing slash).
func quickstarts(base string) []Quickstart {
	v1 := base + "/v1"
	chat := Quickstart{ID: "chat-completions", Protocol: "Chat completions", BaseURL: v1, KeyVar: openAIKey, BaseVar: "OPENAI_BASE_URL", Snippets: []Snippet{
		{"Python (openai)", "python", `# pip install openai; export OPENAI_API_KEY=<your key>
from openai import OpenAI
client = OpenAI(base_url="` + v1 + `")  # reads OPENAI_API_KEY
r = client.chat.completions.create(model="<model id>", messages=[{"role": "user", "content": "Hello"}])
print(r.choices[0].message.content)`},
		{"TypeScript (openai)", "ts", `// npm install openai; export OPENAI_API_KEY=<your key>
import OpenAI from "openai";
const client = new OpenAI({ baseURL: "` + v1 + `" }); // reads OPENAI_API_KEY
const r = await client.chat.completions.create({ model: "<model id>", messages: [{ role: "user", content: "Hello" }] });
console.log(r.choices[0].message.content);`},
		{"Go (openai-go)", "go", `// go get github.com/openai/openai-go; export OPENAI_API_KEY=<your key>
client := openai.NewClient(option.WithBaseURL("` + v1 + `/")) // reads OPENAI_API_KEY
r, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
	Model:    "<model id>",
	Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
})`},
	}}
	responses := Quickstart{ID: "responses", Protocol: "Responses", BaseURL: v1, KeyVar: openAIKey, BaseVar: "OPENAI_BASE_URL", Snippets: []Snippet{
		{"Python (openai)", "python", `from openai import OpenAI
client = OpenAI(base_url="` + v1 + `")  # reads OPENAI_API_KEY
r = client.responses.create(model="<model id>", input="Hello")
print(r.output_text)`},
		{"TypeScript (openai)", "ts", `import OpenAI from "openai";
const client = new OpenAI({ baseURL: "` + v1 + `" }); // reads OPENAI_API_KEY
const r = await client.responses.create({ model: "<model id>", input: "Hello" });
console.log(r.output_text);`},
		{"Go (openai-go)", "go", `client := openai.NewClient(option.WithBaseURL("` + v1 + `/")) // reads OPENAI_API_KEY
r, err := client.Responses.New(ctx, responses.ResponseNewParams{
	Model: "<model id>",
	Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")},
})`},
		{"Codex CLI", "toml", `# ~/.codex/config.toml; export GATEWAY_API_KEY=<your key>
model = "<model id>"
model_provider = "gateway"

[model_providers.gateway]
name = "Model gateway"
base_url = "` + v1 + `"
env_key = "GATEWAY_API_KEY"
wire_api = "responses"`},
	}}
	messages := Quickstart{ID: "messages", Protocol: "Messages", BaseURL: base, KeyVar: anthropicKey, BaseVar: "ANTHROPIC_BASE_URL", Snippets: []Snippet{
		{"Python (anthropic)", "python", `from anthropic import Anthropic
client = Anthropic(base_url="` + base + `")  # reads ANTHROPIC_API_KEY; no /v1 suffix
r = client.messages.create(model="<model id>", max_tokens=256, messages=[{"role": "user", "content": "Hello"}])
print(r.content[0].text)`},
		{"TypeScript (@anthropic-ai/sdk)", "ts", `import Anthropic from "@anthropic-ai/sdk";
const client = new Anthropic({ baseURL: "` + base + `" }); // reads ANTHROPIC_API_KEY
const r = await client.messages.create({ model: "<model id>", max_tokens: 256, messages: [{ role: "user", content: "Hello" }] });`},
		{"Go (anthropic-sdk-go)", "go", `client := anthropic.NewClient(option.WithBaseURL("` + base + `/")) // reads ANTHROPIC_API_KEY
r, err := client.Messages.New(ctx, anthropic.MessageNewParams{
	Model: "<model id>", MaxTokens: 256,
	Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
})`},
		{"Claude Code", "sh", `export ANTHROPIC_BASE_URL=` + base + `
export ANTHROPIC_API_KEY=<your key>
claude --model <model id>`},
	}}
	content := Quickstart{ID: "content-generation", Protocol: "Content generation", BaseURL: base + "/v1beta", KeyVar: geminiKey, BaseVar: "GOOGLE_GEMINI_BASE_URL", Snippets: []Snippet{
		{"Python (google-genai)", "python", `from google import genai
from google.genai import types
client = genai.Client(http_options=types.HttpOptions(base_url="` + base + `/"))  # reads GEMINI_API_KEY; the SDK adds /v1beta
r = client.models.generate_content(model="<model id>", contents="Hello")
print(r.text)`},
		{"TypeScript (@google/genai)", "ts", `import { GoogleGenAI } from "@google/genai";
const ai = new GoogleGenAI({ apiKey: process.env.GEMINI_API_KEY, httpOptions: { baseUrl: "` + base + `/" } });
const r = await ai.models.generateContent({ model: "<model id>", contents: "Hello" });
console.log(r.text);`},
		{"Go (google.golang.org/genai)", "go", `client, err := genai.NewClient(ctx, &genai.ClientConfig{
	APIKey: os.Getenv("GEMINI_API_KEY"), Backend: genai.BackendGeminiAPI,
	HTTPOptions: genai.HTTPOptions{BaseURL: "` + base + `/"},
})
r, err := client.Models.GenerateContent(ctx, "<model id>", genai.Text("Hello"), nil)`},
		{"Gemini CLI", "sh", `export GOOGLE_GEMINI_BASE_URL=` + base + `
export GEMINI_API_KEY=<your key>
gemini --model <model id>`},
	}}
	embeddings := Quickstart{ID: "embeddings", Protocol: "Embeddings, images, audio", BaseURL: v1, KeyVar: openAIKey, BaseVar: "OPENAI_BASE_URL", Snippets: []Snippet{
		{"Python (openai)", "python", `from openai import OpenAI
client = OpenAI(base_url="` + v1 + `")  # reads OPENAI_API_KEY
e = client.embeddings.create(model="<model id>", input="Hello")`},
		{"TypeScript (openai)", "ts", `const e = await new OpenAI({ baseURL: "` + v1 + `" }).embeddings.create({ model: "<model id>", input: "Hello" });`},
		{"Go (openai-go)", "go", `e, err := openai.NewClient(option.WithBaseURL("` + v1 + `/")).Embeddings.New(ctx, openai.EmbeddingNewParams{
	Model: "<model id>", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("Hello")},
})`},
	}}
	return []Quickstart{chat, responses, messages, content, embeddings}
}
