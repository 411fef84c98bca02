// Package verifycli is `gateway verify`: it asks a running gateway, over the admin HTTP route,
// to probe models for the optional parameters they accept (spec 2.3, 2.6), and prints what was
// recorded. The probing itself is core's (core/verify); this is only the operator's way in.
package verifycli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/admincli"
)

// verifyPath is the HTTP route of AdminService.VerifyCapabilities.
const verifyPath = "/admin/v1/capabilities:verify"

// Main implements `gateway verify [-models a,b] [-families x,y]`: it asks the gateway
// to probe optional parameters (spec 2.3, 2.6) and prints the recorded capabilities as JSON.
func Main(ctx context.Context, args []string) error {
	return Run(ctx, args, os.Stdout, os.Getenv("GATEWAY_ADMIN_TOKEN"))
}

// Run is Main with its output and admin token given.
func Run(ctx context.Context, args []string, out io.Writer, token string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	models := fs.String("models", "", "comma-separated model ids; default: every active model")
	families := fs.String("families", "", "comma-separated endpoint families; default: every text-generation family a model is routed on")
	addrs := admincli.AddrFlags(fs)
	fs.StringVar(&addrs.HTTP, "addr", addrs.HTTP, "the same as -http-addr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("verify: unexpected argument %q", fs.Arg(0))
	}
	if token == "" {
		return errors.New("GATEWAY_ADMIN_TOKEN is not set")
	}
	// The admin HTTP route by default; over gRPC, as `gateway admin` calls, when only -grpc-addr is given.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["grpc-addr"] && !set["http-addr"] && !set["addr"] {
		req := &adminv1.VerifyCapabilitiesRequest{Models: splitList(*models), EndpointFamilies: splitList(*families)}
		return admincli.Call(ctx, addrs.GRPC, token, "VerifyCapabilities", req, out)
	}
	return callHTTP(ctx, addrs.HTTP, token, splitList(*models), splitList(*families), out)
}

// callHTTP asks the admin HTTP route and prints its answer indented.
func callHTTP(ctx context.Context, addr, token string, models, families []string, out io.Writer) error {
	body, err := json.Marshal(map[string][]string{"models": models, "endpoint_families": families})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, admincli.BaseURL(addr)+verifyPath, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	// No client timeout: probing many models takes a while, and the server bounds each probe.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("verify: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var env apierror.Envelope
		if json.Unmarshal(raw, &env) == nil && env.Error.Code != "" {
			return fmt.Errorf("%s: %s", env.Error.Code, env.Error.Message)
		}
		return fmt.Errorf("verify: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw, "", "  "); err != nil {
		return fmt.Errorf("verify: the answer is not JSON: %w", err)
	}
	pretty.WriteByte('\n')
	_, err = out.Write(pretty.Bytes())
	return err
}

// splitList splits a comma-separated flag, dropping blanks; never nil, so that the JSON says [].
func splitList(s string) []string {
	out := []string{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
