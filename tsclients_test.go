package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// tsclientsDir holds the TypeScript SDK suite and its pinned npm packages (package-lock.json);
// `npm ci` there installs them (make test does, through deploy/deps/deps.sh).
var tsclientsDir = filepath.Join("testdata", "tsclients")

// The official TypeScript SDKs (openai, @anthropic-ai/sdk, @google/genai and the legacy
// @google/generative-ai), at the versions pinned in testdata/tsclients/package-lock.json, run
// against the real gateway on a throwaway PostgreSQL with the simulator as every upstream:
// each client protocol against each upstream kind, plain and streamed, tools, structured
// output, model lists, errors through the SDKs' own classes, and the cost streams show.
// When an SDK release changes what it sends, this is where it shows first.
func TestOfficialTypeScriptSDKs(t *testing.T) {
	node, err := exec.LookPath("node")
	_, statErr := os.Stat(filepath.Join(tsclientsDir, "node_modules"))
	if err != nil || statErr != nil {
		msg := fmt.Sprintf("THE TYPESCRIPT SDK SUITE DID NOT RUN: node %v, node_modules %v; run `npm ci` in %s (make test does unless GATEWAY_DEPS=skip)", err, statErr, tsclientsDir)
		if os.Getenv("GATEWAY_REQUIRE_TSCLIENTS") != "" {
			t.Fatal(msg)
		}
		fmt.Fprintln(os.Stderr, "\n*** "+msg+" ***")
		t.Skip(msg)
	}
	g := startGenWith(t, func(c *Config) { c.BatchConcurrency = 4 }) // the batch flows need a runner
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "suite.mjs")
	cmd.Dir = tsclientsDir
	limited := g.admin("POST", "/admin/v1/profiles/"+g.profileID+"/keys", `{"name":"rate","allowed_endpoints":["*"],"allowed_models":["*"],"max_requests_per_second":1}`)
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+g.base, "GATEWAY_KEY="+g.key, "GATEWAY_RATE_LIMITED_KEY="+limited["secret"].(string), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test suite.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
