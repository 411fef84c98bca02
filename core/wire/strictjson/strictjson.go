// Package strictjson is the one reading of a client's JSON: the gateway reads a body exactly as
// a provider does, so that what it checks, prices and limits is what the upstream acts on.
//
// Providers match member names exactly (case-sensitive, escapes decoded) and let the last of
// two equal names win; Go's encoding/json matches names case-insensitively, and the gjson
// readers and sjson edits of a passthrough body take the first of two equal names. A body
// like {"MAX_TOKENS":1,"max_tokens":3000} or one with stream_options twice was therefore read
// one way by the gateway and another by the upstream. Here:
//
//   - Check refuses a body that is not exactly one valid JSON value in UTF-8, or that has a
//     duplicate member name (after escapes are decoded) in any object, at any depth: once a
//     body passed it, every reader (first-wins, last-wins, exact or escaped) sees one member
//     per name.
//   - Unmarshal decodes with exact, case-sensitive member names, so that a case variant of a
//     field is an unknown member to the gateway, as it is to the upstream.
//   - Reader reads a text token by token with the same tokenizer, for the one-pass readers of
//     the bodies every request has: the gateway has one JSON tokenizer.
//
// Both use encoding/json/v2's semantics (github.com/go-json-experiment/json is its mirror,
// aliased to the standard library under the jsonv2 experiment and from Go 1.27 on): RFC 7493
// validation and exact name matching by default, without a hand-written tokenizer.
package strictjson

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ErrSyntax is wrapped by every error about text that is not JSON at all.
var ErrSyntax = errors.New("not valid JSON")

// Check reports whether body is one JSON value that every reader reads alike: valid UTF-8,
// valid escapes, and no object with two members of the same name. The error says where.
func Check(body []byte) error {
	if jsontext.Value(body).IsValid() {
		return nil
	}
	// The slow path only describes the fault: the decoder's error carries its place.
	d := jsontext.NewDecoder(strings.NewReader(string(body)))
	if _, err := d.ReadValue(); errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the text is empty", ErrSyntax)
	} else if err != nil {
		return describe(err)
	}
	if _, err := d.ReadToken(); err != nil && !errors.Is(err, io.EOF) {
		return describe(err)
	}
	return fmt.Errorf("%w: the text holds more than one value", ErrSyntax)
}

// Unmarshal decodes data into v with exact member names. data should have passed Check (the
// fronts check a whole body once, before any part of it is decoded); Unmarshal refuses
// duplicate names and invalid UTF-8 as well, for parts decoded on their own.
func Unmarshal(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return describe(err)
	}
	return nil
}

// describe turns the decoder's errors into what a client can act on: the member's place as a
// JSON pointer and what kind of value was expected there, without Go's type names.
func describe(err error) error {
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		ptr := string(syn.JSONPointer)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			// The pointer names the member itself; the message names its object.
			path := tokens(ptr)
			return fmt.Errorf("the member %q appears twice in one object (%s); a name may appear once", syn.JSONPointer.LastToken(), place(path[:max(0, len(path)-1)]))
		case errors.Is(syn.Err, io.ErrUnexpectedEOF) && syn.ByteOffset == 0:
			return fmt.Errorf("%w: the text is empty", ErrSyntax)
		default:
			if ptr == "" {
				return fmt.Errorf("%w: %v at byte %d", ErrSyntax, syn.Err, syn.ByteOffset)
			}
			return fmt.Errorf("%w: %v at byte %d (in %s)", ErrSyntax, syn.Err, syn.ByteOffset, place(tokens(ptr)))
		}
	}
	var sem *json.SemanticError
	if errors.As(err, &sem) {
		path := tokens(string(sem.JSONPointer))
		var inner *FieldError
		if errors.As(sem.Err, &inner) {
			// A type of its own reading decoded its value with Unmarshal: its member's place
			// is below this one.
			return &FieldError{Path: append(path, inner.Path...), Want: inner.Want, Got: inner.Got}
		}
		if sem.Err != nil && !isJSONError(sem.Err) {
			// A type of its own reading refused the value (a field under both spellings,
			// say): its error stands, under the member's name.
			if len(path) == 0 {
				return sem.Err
			}
			return fmt.Errorf("%s: %w", place(path), sem.Err)
		}
		if want := kindOf(sem.GoType); want != "" || sem.Err == nil {
			return &FieldError{Path: path, Want: want, Got: jsonKind(sem.JSONKind)}
		}
		return fmt.Errorf("%s: %v", place(path), sem.Err)
	}
	return err
}

// FieldError is a value of the wrong kind: where it is (the member names and array indices
// from the top of the text decoded), the kind expected and the kind found, in JSON's words.
type FieldError struct {
	Path      []string
	Want, Got string
}

func (e *FieldError) Error() string {
	switch {
	case e.Want == "":
		return place(e.Path) + " has a value that cannot be read"
	case e.Got == "":
		return place(e.Path) + " must be " + e.Want
	}
	return place(e.Path) + " must be " + e.Want + ", not " + e.Got
}

// tokens splits a JSON pointer into its member names and indices.
func tokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	out := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range out {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return out
}

// isJSONError tells the decoder's own faults (a number out of range, a bad base64 text) from
// an error a type's UnmarshalJSON returned.
func isJSONError(err error) bool {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	return errors.As(err, &syn) || errors.As(err, &sem) || errors.Is(err, json.ErrUnknownName) ||
		strings.HasPrefix(err.Error(), "json: ") || strings.HasPrefix(err.Error(), "jsontext: ")
}

// place names a member for a message: its path, or the body for the top level.
func place(path []string) string {
	if len(path) == 0 {
		return "the body"
	}
	return strings.Join(path, ".")
}

// kindOf is the JSON kind a Go type takes, in words; "" when it takes several.
func kindOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return "" // a type of its own reading (a string or a list, say): its error says more
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return ""
}

var unmarshalerType = reflect.TypeFor[interface{ UnmarshalJSON([]byte) error }]()

// jsonKind is a JSON kind in words.
func jsonKind(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return ""
}
