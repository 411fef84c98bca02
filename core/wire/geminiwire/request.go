package geminiwire

import (
	"encoding/json"

	"modelgateway/core/wire/strictjson"
)

// GenerateContentRequest is the body of :generateContent and :streamGenerateContent. The
// model is in the URL; Model is the optional body copy ("models/x" or "x").
type GenerateContentRequest struct {
	Model             string            `json:"model,omitempty"`
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
	SafetySettings    json.RawMessage   `json:"safetySettings,omitempty"`
	CachedContent     string            `json:"cachedContent,omitempty"`
}

// UnmarshalJSON accepts both spellings of every field.
func (r *GenerateContentRequest) UnmarshalJSON(b []byte) error {
	var w struct {
		Model              string            `json:"model"`
		Contents           []Content         `json:"contents"`
		SystemInstruction  *Content          `json:"systemInstruction"`
		SystemInstructionS *Content          `json:"system_instruction"`
		Tools              []Tool            `json:"tools"`
		ToolConfig         *ToolConfig       `json:"toolConfig"`
		ToolConfigS        *ToolConfig       `json:"tool_config"`
		GenerationConfig   *GenerationConfig `json:"generationConfig"`
		GenerationConfigS  *GenerationConfig `json:"generation_config"`
		SafetySettings     *json.RawMessage  `json:"safetySettings"`
		SafetySettingsS    *json.RawMessage  `json:"safety_settings"`
		CachedContent      *string           `json:"cachedContent"`
		CachedContentS     *string           `json:"cached_content"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var s spelling
	*r = GenerateContentRequest{
		Model:             w.Model,
		Contents:          w.Contents,
		SystemInstruction: one(&s, "systemInstruction", "system_instruction", w.SystemInstruction, w.SystemInstructionS),
		Tools:             w.Tools,
		ToolConfig:        one(&s, "toolConfig", "tool_config", w.ToolConfig, w.ToolConfigS),
		GenerationConfig:  one(&s, "generationConfig", "generation_config", w.GenerationConfig, w.GenerationConfigS),
		SafetySettings:    val(one(&s, "safetySettings", "safety_settings", w.SafetySettings, w.SafetySettingsS)),
		CachedContent:     val(one(&s, "cachedContent", "cached_content", w.CachedContent, w.CachedContentS)),
	}
	return s.err
}

// Tool is one tools[] entry: function declarations, or one of the hosted tools that have no
// cross-protocol equivalent (kept raw so that they survive a re-encode).
type Tool struct {
	FunctionDeclarations  []FunctionDeclaration `json:"functionDeclarations,omitempty"`
	GoogleSearch          json.RawMessage       `json:"googleSearch,omitempty"`
	GoogleSearchRetrieval json.RawMessage       `json:"googleSearchRetrieval,omitempty"`
	CodeExecution         json.RawMessage       `json:"codeExecution,omitempty"`
	URLContext            json.RawMessage       `json:"urlContext,omitempty"`
	FileSearch            json.RawMessage       `json:"fileSearch,omitempty"`
	GoogleMaps            json.RawMessage       `json:"googleMaps,omitempty"`
	ComputerUse           json.RawMessage       `json:"computerUse,omitempty"`
}

// Hosted reports whether the tool is a server-side tool rather than function declarations.
func (t Tool) Hosted() bool {
	return t.GoogleSearch != nil || t.GoogleSearchRetrieval != nil || t.CodeExecution != nil ||
		t.URLContext != nil || t.FileSearch != nil || t.GoogleMaps != nil || t.ComputerUse != nil
}

// UnmarshalJSON accepts both spellings of every field.
func (t *Tool) UnmarshalJSON(b []byte) error {
	var w struct {
		FunctionDeclarations   *[]FunctionDeclaration `json:"functionDeclarations"`
		FunctionDeclarationsS  *[]FunctionDeclaration `json:"function_declarations"`
		GoogleSearch           *json.RawMessage       `json:"googleSearch"`
		GoogleSearchS          *json.RawMessage       `json:"google_search"`
		GoogleSearchRetrieval  *json.RawMessage       `json:"googleSearchRetrieval"`
		GoogleSearchRetrievalS *json.RawMessage       `json:"google_search_retrieval"`
		CodeExecution          *json.RawMessage       `json:"codeExecution"`
		CodeExecutionS         *json.RawMessage       `json:"code_execution"`
		URLContext             *json.RawMessage       `json:"urlContext"`
		URLContextS            *json.RawMessage       `json:"url_context"`
		FileSearch             *json.RawMessage       `json:"fileSearch"`
		FileSearchS            *json.RawMessage       `json:"file_search"`
		GoogleMaps             *json.RawMessage       `json:"googleMaps"`
		GoogleMapsS            *json.RawMessage       `json:"google_maps"`
		ComputerUse            *json.RawMessage       `json:"computerUse"`
		ComputerUseS           *json.RawMessage       `json:"computer_use"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var s spelling
	*t = Tool{
		FunctionDeclarations:  val(one(&s, "functionDeclarations", "function_declarations", w.FunctionDeclarations, w.FunctionDeclarationsS)),
		GoogleSearch:          val(one(&s, "googleSearch", "google_search", w.GoogleSearch, w.GoogleSearchS)),
		GoogleSearchRetrieval: val(one(&s, "googleSearchRetrieval", "google_search_retrieval", w.GoogleSearchRetrieval, w.GoogleSearchRetrievalS)),
		CodeExecution:         val(one(&s, "codeExecution", "code_execution", w.CodeExecution, w.CodeExecutionS)),
		URLContext:            val(one(&s, "urlContext", "url_context", w.URLContext, w.URLContextS)),
		FileSearch:            val(one(&s, "fileSearch", "file_search", w.FileSearch, w.FileSearchS)),
		GoogleMaps:            val(one(&s, "googleMaps", "google_maps", w.GoogleMaps, w.GoogleMapsS)),
		ComputerUse:           val(one(&s, "computerUse", "computer_use", w.ComputerUse, w.ComputerUseS)),
	}
	return s.err
}

// FunctionDeclaration declares one function. Parameters is the OpenAPI-subset Schema;
// ParametersJSONSchema a full JSON Schema; the two are mutually exclusive.
type FunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	Response             json.RawMessage `json:"response,omitempty"`
	ResponseJSONSchema   json.RawMessage `json:"responseJsonSchema,omitempty"`
	Behavior             string          `json:"behavior,omitempty"`
}

// UnmarshalJSON accepts both spellings of every field.
func (f *FunctionDeclaration) UnmarshalJSON(b []byte) error {
	var w struct {
		Name                  string           `json:"name"`
		Description           string           `json:"description"`
		Parameters            json.RawMessage  `json:"parameters"`
		ParametersJSONSchema  *json.RawMessage `json:"parametersJsonSchema"`
		ParametersJSONSchemaS *json.RawMessage `json:"parameters_json_schema"`
		Response              json.RawMessage  `json:"response"`
		ResponseJSONSchema    *json.RawMessage `json:"responseJsonSchema"`
		ResponseJSONSchemaS   *json.RawMessage `json:"response_json_schema"`
		Behavior              string           `json:"behavior"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var s spelling
	*f = FunctionDeclaration{
		Name: w.Name, Description: w.Description, Behavior: w.Behavior,
		Parameters:           nullToNil(w.Parameters),
		ParametersJSONSchema: val(one(&s, "parametersJsonSchema", "parameters_json_schema", w.ParametersJSONSchema, w.ParametersJSONSchemaS)),
		Response:             nullToNil(w.Response),
		ResponseJSONSchema:   val(one(&s, "responseJsonSchema", "response_json_schema", w.ResponseJSONSchema, w.ResponseJSONSchemaS)),
	}
	return s.err
}

// ToolConfig configures function calling.
type ToolConfig struct {
	FunctionCallingConfig *FunctionCallingConfig `json:"functionCallingConfig,omitempty"`
}

// UnmarshalJSON accepts both spellings.
func (t *ToolConfig) UnmarshalJSON(b []byte) error {
	var w struct {
		FunctionCallingConfig  *FunctionCallingConfig `json:"functionCallingConfig"`
		FunctionCallingConfigS *FunctionCallingConfig `json:"function_calling_config"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var s spelling
	*t = ToolConfig{FunctionCallingConfig: one(&s, "functionCallingConfig", "function_calling_config", w.FunctionCallingConfig, w.FunctionCallingConfigS)}
	return s.err
}

// Function calling modes.
const (
	ModeAuto      = "AUTO"
	ModeAny       = "ANY"
	ModeNone      = "NONE"
	ModeValidated = "VALIDATED"
)

// FunctionCallingConfig is the tool-choice policy.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode,omitempty"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// UnmarshalJSON accepts both spellings.
func (f *FunctionCallingConfig) UnmarshalJSON(b []byte) error {
	var w struct {
		Mode                  string    `json:"mode"`
		AllowedFunctionNames  *[]string `json:"allowedFunctionNames"`
		AllowedFunctionNamesS *[]string `json:"allowed_function_names"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var s spelling
	*f = FunctionCallingConfig{Mode: w.Mode, AllowedFunctionNames: val(one(&s, "allowedFunctionNames", "allowed_function_names", w.AllowedFunctionNames, w.AllowedFunctionNamesS))}
	return s.err
}

// nullToNil makes an explicit JSON null look absent.
func nullToNil(m json.RawMessage) json.RawMessage {
	if string(m) == "null" {
		return nil
	}
	return m
}
