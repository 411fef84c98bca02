// Package geminiwire holds the JSON types of the content-generation protocol (Gemini API,
// v1beta): GenerateContentRequest and Response, usageMetadata, countTokens, and the error body.
//
// The REST API is proto3 JSON, so it accepts both lowerCamelCase and snake_case field names
// (Google's own curl examples use snake_case, the SDKs camelCase) and answers 400 when one
// field is set under both names. Request types therefore decode both spellings and reject a
// field given twice (see ErrBothSpellings); every type encodes lowerCamelCase only. Response
// types decode lowerCamelCase only, which is all an upstream sends; the Content and Part they
// contain share the request's lenient decoding.
//
// The package is a leaf (stdlib only): front and core both import it.
package geminiwire
