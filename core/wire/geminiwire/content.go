package geminiwire

import (
	"encoding/json"

	"modelgateway/core/wire/strictjson"
)

// Roles of a Content.
const (
	RoleUser  = "user"
	RoleModel = "model"
)

// Content is one turn: a role and its parts. The role defaults to user.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part holds exactly one data field (text, inlineData, fileData, functionCall,
// functionResponse, ...) plus optional metadata. Text is a pointer because an empty text part
// is still a text part (Gemini sends {"text":"","thoughtSignature":"..."}).
type Part struct {
	Text *string `json:"text,omitempty"`
	// Thought marks a thought summary (output only; echoed back by some clients).
	Thought bool `json:"thought,omitempty"`
	// ThoughtSignature is opaque base64 that must come back on the same part in later turns.
	ThoughtSignature    string            `json:"thoughtSignature,omitempty"`
	InlineData          *Blob             `json:"inlineData,omitempty"`
	FileData            *FileData         `json:"fileData,omitempty"`
	FunctionCall        *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse    *FunctionResponse `json:"functionResponse,omitempty"`
	ExecutableCode      json.RawMessage   `json:"executableCode,omitempty"`
	CodeExecutionResult json.RawMessage   `json:"codeExecutionResult,omitempty"`
	VideoMetadata       json.RawMessage   `json:"videoMetadata,omitempty"`
}

// TextPart is a part holding text.
func TextPart(s string) Part { return Part{Text: &s} }

// UnmarshalJSON accepts both spellings of every field.
func (p *Part) UnmarshalJSON(b []byte) error {
	var w struct {
		Text                 *string           `json:"text"`
		Thought              *bool             `json:"thought"`
		ThoughtSignature     *string           `json:"thoughtSignature"`
		ThoughtSignatureS    *string           `json:"thought_signature"`
		InlineData           *Blob             `json:"inlineData"`
		InlineDataS          *Blob             `json:"inline_data"`
		FileData             *FileData         `json:"fileData"`
		FileDataS            *FileData         `json:"file_data"`
		FunctionCall         *FunctionCall     `json:"functionCall"`
		FunctionCallS        *FunctionCall     `json:"function_call"`
		FunctionResponse     *FunctionResponse `json:"functionResponse"`
		FunctionResponseS    *FunctionResponse `json:"function_response"`
		ExecutableCode       *json.RawMessage  `json:"executableCode"`
		ExecutableCodeS      *json.RawMessage  `json:"executable_code"`
		CodeExecutionResult  *json.RawMessage  `json:"codeExecutionResult"`
		CodeExecutionResultS *json.RawMessage  `json:"code_execution_result"`
		VideoMetadata        *json.RawMessage  `json:"videoMetadata"`
		VideoMetadataS       *json.RawMessage  `json:"video_metadata"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var s spelling
	*p = Part{
		Text:                w.Text,
		Thought:             val(w.Thought),
		ThoughtSignature:    val(one(&s, "thoughtSignature", "thought_signature", w.ThoughtSignature, w.ThoughtSignatureS)),
		InlineData:          one(&s, "inlineData", "inline_data", w.InlineData, w.InlineDataS),
		FileData:            one(&s, "fileData", "file_data", w.FileData, w.FileDataS),
		FunctionCall:        one(&s, "functionCall", "function_call", w.FunctionCall, w.FunctionCallS),
		FunctionResponse:    one(&s, "functionResponse", "function_response", w.FunctionResponse, w.FunctionResponseS),
		ExecutableCode:      val(one(&s, "executableCode", "executable_code", w.ExecutableCode, w.ExecutableCodeS)),
		CodeExecutionResult: val(one(&s, "codeExecutionResult", "code_execution_result", w.CodeExecutionResult, w.CodeExecutionResultS)),
		VideoMetadata:       val(one(&s, "videoMetadata", "video_metadata", w.VideoMetadata, w.VideoMetadataS)),
	}
	return s.err
}

// Blob is inline data: a media type and standard base64 bytes.
type Blob struct {
	MimeType string `json:"mimeType,omitempty"`
	Data     string `json:"data"`
}

// UnmarshalJSON accepts mimeType and mime_type.
func (b *Blob) UnmarshalJSON(data []byte) error {
	var w struct {
		MimeType  *string `json:"mimeType"`
		MimeTypeS *string `json:"mime_type"`
		Data      string  `json:"data"`
	}
	if err := strictjson.Unmarshal(data, &w); err != nil {
		return err
	}
	var s spelling
	*b = Blob{MimeType: val(one(&s, "mimeType", "mime_type", w.MimeType, w.MimeTypeS)), Data: w.Data}
	return s.err
}

// FileData refers to an uploaded file (Files API or gs:// URI), not to an arbitrary URL.
type FileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// UnmarshalJSON accepts both spellings.
func (f *FileData) UnmarshalJSON(data []byte) error {
	var w struct {
		MimeType  *string `json:"mimeType"`
		MimeTypeS *string `json:"mime_type"`
		FileURI   *string `json:"fileUri"`
		FileURIS  *string `json:"file_uri"`
	}
	if err := strictjson.Unmarshal(data, &w); err != nil {
		return err
	}
	var s spelling
	*f = FileData{
		MimeType: val(one(&s, "mimeType", "mime_type", w.MimeType, w.MimeTypeS)),
		FileURI:  val(one(&s, "fileUri", "file_uri", w.FileURI, w.FileURIS)),
	}
	return s.err
}

// FunctionCall is a complete tool call; Args is a JSON object. The Gemini API usually leaves
// ID empty.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is a tool result; Response must be a JSON object (a Struct).
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}
