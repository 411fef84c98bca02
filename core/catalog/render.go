package catalog

import (
	"fmt"
	"time"
)

// The canonical JSON form has its own types because Document carries no JSON tags: its
// amounts, durations and defaults are rendered in the document's notation, not Go's.

type jsonDocument struct {
	Currency  string         `json:"currency,omitempty"`
	Prune     bool           `json:"prune"`
	Families  []jsonFamily   `json:"families"`
	Providers []jsonProvider `json:"providers"`
	Models    []jsonModel    `json:"models"`
}

type jsonFamily struct {
	ID string `json:"id"`
}

type jsonProvider struct {
	ID        string       `json:"id"`
	Kind      string       `json:"kind"`
	BaseURL   string       `json:"base_url,omitempty"`
	APIKeyEnv any          `json:"api_key_env,omitempty"` // a string, or a list for a pool
	Timeout   *jsonTimeout `json:"timeout,omitempty"`
	Retry     *jsonRetry   `json:"retry,omitempty"`
	Cooldown  string       `json:"cooldown,omitempty"`
}

type jsonRetry struct {
	Attempts int    `json:"attempts"`
	Backoff  string `json:"backoff,omitempty"`
}

type jsonTimeout struct {
	FirstByte string `json:"first_byte,omitempty"`
	Idle      string `json:"idle,omitempty"`
}

type jsonModel struct {
	ID               string           `json:"id"`
	DisplayName      string           `json:"display_name"`
	Family           string           `json:"family"`
	OwnedBy          string           `json:"owned_by"`
	Priority         int              `json:"priority"`
	Active           bool             `json:"active"`
	OutputTokenLimit *int             `json:"output_token_limit"`
	Streaming        bool             `json:"streaming"`
	BatchPriceFactor *string          `json:"batch_price_factor,omitempty"`
	Routes           []jsonRoute      `json:"routes"`
	Prices           []jsonPrice      `json:"prices"`
	Capabilities     []jsonCapability `json:"capabilities"`
}

type jsonRoute struct {
	EndpointFamilies []string `json:"endpoint_families"`
	Provider         string   `json:"provider"`
	UpstreamModel    string   `json:"upstream_model"`
	Priority         *int     `json:"priority,omitempty"`
	Weight           *int     `json:"weight,omitempty"`
}

type jsonPrice struct {
	EndpointFamilies []string `json:"endpoint_families"`
	BillingMode      string   `json:"billing_mode"`
	Input            *string  `json:"input"`
	CachedInput      *string  `json:"cached_input"`
	CacheWrite       *string  `json:"cache_write"`
	Output           *string  `json:"output"`
	Request          *string  `json:"request"`
	AudioInput       *string  `json:"audio_input,omitempty"`
	AudioOutput      *string  `json:"audio_output,omitempty"`
}

type jsonCapability struct {
	EndpointFamily     string   `json:"endpoint_family"`
	OptionalParameters []string `json:"optional_parameters"`
	VerifiedAt         string   `json:"verified_at"`
}

func render(d *Document) jsonDocument {
	out := jsonDocument{
		Currency:  d.Currency,
		Prune:     d.Prune,
		Families:  make([]jsonFamily, 0, len(d.Families)),
		Providers: make([]jsonProvider, 0, len(d.Providers)),
		Models:    make([]jsonModel, 0, len(d.Models)),
	}
	for _, f := range d.Families {
		out.Families = append(out.Families, jsonFamily{ID: f.ID})
	}
	for _, p := range d.Providers {
		jp := jsonProvider{ID: p.ID, Kind: p.Kind, BaseURL: p.BaseURL, Cooldown: formatDuration(p.Cooldown)}
		switch {
		case len(p.APIKeyPool) > 0:
			jp.APIKeyEnv = p.APIKeyPool
		case p.APIKeyEnv != "":
			jp.APIKeyEnv = p.APIKeyEnv
		}
		if p.Retry != nil {
			jp.Retry = &jsonRetry{Attempts: p.Retry.Attempts, Backoff: formatDuration(p.Retry.Backoff)}
		}
		if p.FirstByteTimeout != 0 || p.IdleTimeout != 0 {
			jp.Timeout = &jsonTimeout{FirstByte: formatDuration(p.FirstByteTimeout), Idle: formatDuration(p.IdleTimeout)}
		}
		out.Providers = append(out.Providers, jp)
	}
	for _, m := range d.Models {
		out.Models = append(out.Models, renderModel(m))
	}
	return out
}

func renderModel(m Model) jsonModel {
	jm := jsonModel{
		ID:               m.ID,
		DisplayName:      m.DisplayName,
		Family:           m.Family,
		OwnedBy:          m.OwnedBy,
		Priority:         m.Priority,
		Active:           m.Active,
		OutputTokenLimit: m.OutputTokenLimit,
		Streaming:        m.Streaming,
		Routes:           make([]jsonRoute, 0, len(m.Routes)),
		Prices:           make([]jsonPrice, 0, len(m.Prices)),
		Capabilities:     make([]jsonCapability, 0, len(m.Capabilities)),
	}
	if f := m.BatchPriceFactor; f != nil {
		s := f.String()
		jm.BatchPriceFactor = &s
	}
	for _, r := range m.Routes {
		jm.Routes = append(jm.Routes, jsonRoute{
			EndpointFamilies: orEmpty(r.EndpointFamilies),
			Provider:         r.Provider,
			UpstreamModel:    r.UpstreamModel,
			Priority:         r.Priority,
			Weight:           r.Weight,
		})
	}
	for _, p := range m.Prices {
		jp := jsonPrice{EndpointFamilies: orEmpty(p.EndpointFamilies), BillingMode: p.BillingMode}
		targets := map[string]**string{
			"input": &jp.Input, "cached_input": &jp.CachedInput, "cache_write": &jp.CacheWrite,
			"output": &jp.Output, "request": &jp.Request, "audio_input": &jp.AudioInput, "audio_output": &jp.AudioOutput,
		}
		for _, c := range p.components() {
			if a := *c.amount; a != nil {
				s := a.String() // never exponent notation, so it reads as the operator wrote it
				*targets[c.name] = &s
			}
		}
		jm.Prices = append(jm.Prices, jp)
	}
	for _, c := range m.Capabilities {
		jm.Capabilities = append(jm.Capabilities, jsonCapability{
			EndpointFamily:     c.EndpointFamily,
			OptionalParameters: orEmpty(c.OptionalParameters), // [] is a claim; it must not turn into null
			VerifiedAt:         c.VerifiedAt.UTC().Format(time.RFC3339Nano),
		})
	}
	return jm
}

// formatDuration writes whole seconds as "60s" rather than Go's "1m0s", which is how
// operators write timeouts; "" stands for the default.
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	default:
		return d.String()
	}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
