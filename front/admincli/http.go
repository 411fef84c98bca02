package admincli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"modelgateway/core/wire/apierror"
)

// pathParam is a {field.path} of an HTTP rule's path template.
var pathParam = regexp.MustCompile(`\{([a-z0-9_.]+)\}`)

// callHTTP calls the RPC on its admin HTTP route (the google.api.http rule the gateway serves
// it on): `gateway admin -http-addr ADDR VERB` reaches a gateway whose gRPC port is not exposed.
func callHTTP(ctx context.Context, base, token string, md protoreflect.MethodDescriptor, req proto.Message) (proto.Message, error) {
	if token == "" {
		return nil, errors.New("GATEWAY_ADMIN_TOKEN is not set")
	}
	rule, _ := proto.GetExtension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
	if rule == nil {
		return nil, fmt.Errorf("%s has no HTTP route", md.Name())
	}
	method, tmpl := httpPattern(rule)
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(req)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	path := pathParam.ReplaceAllStringFunc(tmpl, func(p string) string {
		name := p[1 : len(p)-1]
		delete(fields, name)
		return url.PathEscape(fieldText(req.ProtoReflect(), name))
	})
	var body []byte
	switch rule.Body {
	case "":
		path += queryOf(fields)
	case "*":
		body, err = json.Marshal(fields)
	default:
		body = fields[rule.Body]
	}
	if err != nil {
		return nil, err
	}
	if len(body) > 0 { // protojson spaces at random: one form on the wire, as a client writes it
		var c bytes.Buffer
		if err := json.Compact(&c, body); err != nil {
			return nil, err
		}
		body = c.Bytes()
	}
	hreq, err := http.NewRequestWithContext(ctx, method, BaseURL(base)+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("call gateway: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var env apierror.Envelope
		if json.Unmarshal(answer, &env) == nil && env.Error.Code != "" {
			return nil, fmt.Errorf("%s: %s", env.Error.Code, env.Error.Message)
		}
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(answer))
	}
	out := newMessage(md.Output())
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(answer, out); err != nil {
		return nil, fmt.Errorf("the answer is not a %s: %w", md.Output().Name(), err)
	}
	return out, nil
}

func httpPattern(r *annotations.HttpRule) (method, path string) {
	switch p := r.Pattern.(type) {
	case *annotations.HttpRule_Get:
		return http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		return http.MethodPost, p.Post
	case *annotations.HttpRule_Patch:
		return http.MethodPatch, p.Patch
	case *annotations.HttpRule_Put:
		return http.MethodPut, p.Put
	case *annotations.HttpRule_Delete:
		return http.MethodDelete, p.Delete
	}
	return http.MethodPost, ""
}

// fieldText is the text of the (nested) field at a dotted path, for a path template.
func fieldText(m protoreflect.Message, path string) string {
	names := strings.Split(path, ".")
	for _, n := range names[:len(names)-1] {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(n))
		if fd == nil || fd.Kind() != protoreflect.MessageKind {
			return ""
		}
		m = m.Get(fd).Message()
	}
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(names[len(names)-1]))
	if fd == nil {
		return ""
	}
	return m.Get(fd).String()
}

// queryOf writes the request's remaining fields as a query string: repeated fields repeat.
func queryOf(fields map[string]json.RawMessage) string {
	q := url.Values{}
	for name, raw := range fields {
		var list []any
		if json.Unmarshal(raw, &list) != nil {
			list = []any{nil}
			_ = json.Unmarshal(raw, &list[0])
		}
		for _, v := range list {
			q.Add(name, fmt.Sprint(v))
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// BaseURL turns a listener address (127.0.0.1:8080, :8080) or a URL into a base URL.
func BaseURL(addr string) string {
	if strings.Contains(addr, "://") {
		return strings.TrimRight(addr, "/")
	}
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	return "http://" + addr
}
