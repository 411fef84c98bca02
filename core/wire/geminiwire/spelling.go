package geminiwire

import "fmt"

// ErrBothSpellings is a field given under both its camelCase and its snake_case name, which
// the upstream API rejects ("oneof field ... is already set").
type ErrBothSpellings struct {
	Camel, Snake string
}

func (e *ErrBothSpellings) Error() string {
	return fmt.Sprintf("both %q and %q are set; use one spelling", e.Camel, e.Snake)
}

// spelling collects the first field set under both names while one object is merged.
type spelling struct{ err error }

// one returns whichever of the two spellings is set (JSON null counts as unset). Decoding
// into a shadow struct with a field per spelling costs one pass over the input, where
// rewriting keys would re-scan every nested object (and its inline base64) once per level.
func one[T any](s *spelling, camel, snake string, c, k *T) *T {
	if c != nil && k != nil && s.err == nil {
		s.err = &ErrBothSpellings{Camel: camel, Snake: snake}
	}
	if c != nil {
		return c
	}
	return k
}

// val dereferences p, or gives the zero value.
func val[T any](p *T) T {
	if p == nil {
		var z T
		return z
	}
	return *p
}
