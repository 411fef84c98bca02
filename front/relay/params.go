package relay

// Params lists the canonical names (spec 2.6) of the optional parameters a client set, in the
// order a protocol's decoder adds them; nil when there are none.
type Params []string

// Add lists name when the client set the parameter.
func (p *Params) Add(present bool, name string) {
	if present {
		*p = append(*p, name)
	}
}
