// Package admincli is `gateway admin` and `gateway apply`: the operator's shell way in to the
// AdminService, over gRPC like any other client. It reaches core only through gen/ and
// core/wire: the catalogue document is converted from YAML here and validated by the server.
package admincli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/wire/apistatus"
	"modelgateway/core/wire/yamljson"
)

const adminUsage = `usage: gateway admin [-grpc-addr ADDR | -http-addr ADDR] VERB [--field=value ...] ['{"json":"request"}']

Calls one AdminService RPC over gRPC (-grpc-addr, default GATEWAY_GRPC_ADDR or 127.0.0.1:9090),
or over its admin HTTP route when only -http-addr is given (default GATEWAY_HTTP_ADDR or
127.0.0.1:8080), with the bearer GATEWAY_ADMIN_TOKEN, and prints the result as JSON. Fields are the request's proto field
names; repeated fields take comma-separated values. A JSON request object may be given instead
of, or besides, flags. "gateway admin VERB --help" lists the verb's fields.

verbs:
`

// adminMethods maps kebab-case verbs (create-profile) to the RPCs of the service descriptor, so
// every RPC the proto defines is reachable without a hand-written case.
func adminMethods() map[string]protoreflect.MethodDescriptor {
	sd := adminv1.File_gateway_admin_v1_admin_proto.Services().ByName("AdminService")
	out := map[string]protoreflect.MethodDescriptor{}
	for i := 0; i < sd.Methods().Len(); i++ {
		m := sd.Methods().Get(i)
		out[kebab(string(m.Name()))] = m
	}
	return out
}

func kebab(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Admin implements `gateway admin [-grpc-addr ADDR] VERB [--field=value ...] ['{"json":"request"}']`.
func Admin(ctx context.Context, args []string, out io.Writer) error {
	methods := adminMethods()
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { printVerbs(out, methods) }
	addr := AddrFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
		}
		return err
	}
	if args = fs.Args(); len(args) == 0 || args[0] == "help" {
		printVerbs(out, methods)
		return nil
	}
	md, ok := methods[args[0]]
	if !ok {
		return fmt.Errorf("unknown admin verb %q (try: gateway admin help)", args[0])
	}
	if wantsHelp(args[1:]) {
		printFields(out, args[0], md)
		return flag.ErrHelp
	}
	req, err := buildRequest(md.Input(), args[1:])
	if err != nil {
		return err
	}
	var resp proto.Message
	if addr.viaHTTP(fs) {
		resp, err = callHTTP(ctx, addr.HTTP, os.Getenv("GATEWAY_ADMIN_TOKEN"), md, req)
	} else {
		resp, err = callAdmin(ctx, addr.GRPC, md, req)
	}
	if err != nil {
		return err
	}
	return printJSON(out, resp)
}

// viaHTTP is true when the command line named -http-addr (and not -grpc-addr): the command
// then calls over HTTP instead of its own default.
func (a *Addrs) viaHTTP(fs *flag.FlagSet) bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return (set["http-addr"] || set["addr"]) && !set["grpc-addr"]
}

// Addrs are the gateway addresses `gateway admin` and `gateway verify` both take: admin calls
// over gRPC unless only -http-addr is given, verify over HTTP unless only -grpc-addr is.
type Addrs struct {
	GRPC, HTTP string
}

// AddrFlags defines -grpc-addr and -http-addr, defaulted from GATEWAY_GRPC_ADDR and
// GATEWAY_HTTP_ADDR as the gateway's own listeners are.
func AddrFlags(fs *flag.FlagSet) *Addrs {
	a := &Addrs{}
	fs.StringVar(&a.GRPC, "grpc-addr", envOr("GATEWAY_GRPC_ADDR", "127.0.0.1:9090"), "the gateway's gRPC address (GATEWAY_GRPC_ADDR)")
	fs.StringVar(&a.HTTP, "http-addr", envOr("GATEWAY_HTTP_ADDR", "127.0.0.1:8080"), "the gateway's HTTP address or base URL (GATEWAY_HTTP_ADDR)")
	return a
}

func printVerbs(out io.Writer, methods map[string]protoreflect.MethodDescriptor) {
	verbs := make([]string, 0, len(methods))
	for v := range methods {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	fmt.Fprint(out, adminUsage+"  "+strings.Join(verbs, "\n  ")+"\n")
}

// wantsHelp is true when a verb's arguments ask for its help rather than a call.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "--help", "-help", "help":
			return true
		}
	}
	return false
}

// printFields is `gateway admin VERB --help`: the RPC and the request's fields with the form
// each flag takes, read from the descriptor so that a new field is listed without an edit.
func printFields(out io.Writer, verb string, md protoreflect.MethodDescriptor) {
	fmt.Fprintf(out, "usage: gateway admin [-grpc-addr ADDR | -http-addr ADDR] %s [--field=value ...] ['{\"json\":\"request\"}']\n\n", verb)
	fmt.Fprintf(out, "Calls %s.%s with a %s and prints the %s it returns as JSON.\n\nfields:\n",
		md.Parent().Name(), md.Name(), md.Input().Name(), md.Output().Name())
	fields := md.Input().Fields()
	if fields.Len() == 0 {
		fmt.Fprintln(out, "  (none)")
	}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		fmt.Fprintf(out, "  --%s=%s\n", fd.Name(), fieldForm(fd))
	}
}

// fieldForm is how a flag's value is written for the field's type.
func fieldForm(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "KEY=VALUE,..."
	case fd.Kind() == protoreflect.EnumKind:
		vals := fd.Enum().Values()
		names := make([]string, 0, vals.Len())
		for i := 0; i < vals.Len(); i++ {
			names = append(names, string(vals.Get(i).Name()))
		}
		return strings.Join(names, "|")
	case fd.Kind() == protoreflect.BoolKind:
		return "true|false"
	case fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() == "google.protobuf.Timestamp":
		return "RFC3339-TIME"
	case fd.Kind() == protoreflect.MessageKind:
		return "JSON (" + string(fd.Message().Name()) + ")"
	case fd.IsList():
		return strings.ToUpper(fd.Kind().String()) + ",..."
	}
	return strings.ToUpper(fd.Kind().String())
}

// printJSON prints a message the way jq does: two-space indent, one space after the colon.
// protojson's own Multiline output spaces randomly (two spaces, on purpose: it is unstable).
func printJSON(out io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err = out.Write(buf.Bytes())
	return err
}

// buildRequest turns --field=value flags and an optional JSON object into the request message.
func buildRequest(desc protoreflect.MessageDescriptor, args []string) (proto.Message, error) {
	fields := map[string]any{}
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "{"):
			if err := json.Unmarshal([]byte(a), &fields); err != nil {
				return nil, fmt.Errorf("request JSON: %w", err)
			}
		case strings.HasPrefix(a, "--"):
			name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !ok {
				return nil, fmt.Errorf("flag %s: use --%s=value", a, name)
			}
			name = strings.ReplaceAll(name, "-", "_")
			fd := desc.Fields().ByName(protoreflect.Name(name))
			if fd == nil {
				return nil, fmt.Errorf("flag --%s: %s has no such field", name, desc.Name())
			}
			switch {
			case fd.IsList():
				parts := []string{}
				if value != "" {
					parts = strings.Split(value, ",")
				}
				fields[name] = parts
			case fd.Kind() == protoreflect.BoolKind:
				fields[name] = value == "true"
			case fd.Kind() == protoreflect.MessageKind && !fd.IsMap() && fd.Message().FullName() != "google.protobuf.Timestamp":
				var v any
				if err := json.Unmarshal([]byte(value), &v); err != nil {
					return nil, fmt.Errorf("flag --%s: JSON value expected: %w", name, err)
				}
				fields[name] = v
			case fd.IsMap():
				m := map[string]string{}
				for _, kv := range strings.Split(value, ",") {
					k, v, _ := strings.Cut(kv, "=")
					m[k] = v
				}
				fields[name] = m
			default:
				fields[name] = value
			}
		default:
			return nil, fmt.Errorf("unexpected argument %q", a)
		}
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	msg := newMessage(desc)
	if err := protojson.Unmarshal(raw, msg); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	return msg, nil
}

func newMessage(desc protoreflect.MessageDescriptor) proto.Message {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(desc.FullName())
	if err != nil {
		panic(err) // generated types are always registered
	}
	return mt.New().Interface()
}

// describeRPCError prints a failed admin call as its spec code and message.
func describeRPCError(err error) error {
	e := apistatus.FromError(err)
	return fmt.Errorf("%s: %s", e.Code, e.Message)
}

// Call calls the AdminService RPC named rpc (VerifyCapabilities) at the gRPC address with the
// admin token and prints its answer as JSON: `gateway verify -grpc-addr` goes this way.
func Call(ctx context.Context, addr, token, rpc string, req proto.Message, out io.Writer) error {
	md := adminv1.File_gateway_admin_v1_admin_proto.Services().ByName("AdminService").Methods().ByName(protoreflect.Name(rpc))
	if md == nil {
		return fmt.Errorf("AdminService has no RPC %s", rpc)
	}
	resp, err := callAdminAs(ctx, addr, token, md, req)
	if err != nil {
		return err
	}
	return printJSON(out, resp)
}

func callAdmin(ctx context.Context, addr string, md protoreflect.MethodDescriptor, req proto.Message) (proto.Message, error) {
	return callAdminAs(ctx, addr, os.Getenv("GATEWAY_ADMIN_TOKEN"), md, req)
}

func callAdminAs(ctx context.Context, addr, token string, md protoreflect.MethodDescriptor, req proto.Message) (proto.Message, error) {
	if token == "" {
		return nil, errors.New("GATEWAY_ADMIN_TOKEN is not set")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial gateway: %w", err)
	}
	defer conn.Close()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	resp := newMessage(md.Output())
	method := fmt.Sprintf("/%s/%s", md.Parent().FullName(), md.Name())
	if err := conn.Invoke(ctx, method, req, resp); err != nil {
		return nil, describeRPCError(err)
	}
	return resp, nil
}

// Apply implements `gateway apply -f FILE`: it sends a catalogue document (YAML or JSON) to
// AdminService.ApplyCatalog and prints the result.
func Apply(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	file := fs.String("f", "", "catalog document (YAML or JSON)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("apply: -f FILE is required")
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	// The server validates the document and applies nothing if any of it is wrong; YAML
	// becomes JSON as on the admin HTTP route, fractional amounts as their literal text.
	js, err := yamljson.Convert(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	st := &structpb.Struct{}
	if err := protojson.Unmarshal(js, st); err != nil {
		return fmt.Errorf("%s: the document is not a mapping: %w", *file, err)
	}
	md := adminv1.File_gateway_admin_v1_admin_proto.Services().ByName("AdminService").Methods().ByName("ApplyCatalog")
	resp, err := callAdmin(ctx, envOr("GATEWAY_GRPC_ADDR", "127.0.0.1:9090"), md, &adminv1.ApplyCatalogRequest{Document: st})
	if err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	if err := printJSON(os.Stdout, resp); err != nil {
		return err
	}
	// The server's warnings (e.g. a provider key variable it does not have) on stderr too.
	if f := resp.ProtoReflect().Descriptor().Fields().ByName("warnings"); f != nil {
		ws := resp.ProtoReflect().Get(f).List()
		for i := 0; i < ws.Len(); i++ {
			fmt.Fprintln(os.Stderr, "warning:", ws.Get(i).String())
		}
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
