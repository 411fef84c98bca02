package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// fixture writes a stand-in binary and a one-certificate bundle.
func fixture(t *testing.T) (binary, certs string) {
	t.Helper()
	dir := t.TempDir()
	binary, certs = filepath.Join(dir, "gateway"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(binary, []byte("\x7fELF static gateway stand-in"), 0o755); err != nil {
		t.Fatal(err)
	}
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(certs, []byte(pem), 0o644); err != nil {
		t.Fatal(err)
	}
	return binary, certs
}

// The docker tarball read back: entrypoint, user 65532, listeners on all interfaces, and the
// files of the base and the binary with their modes and owners.
func TestTarballReadBack(t *testing.T) {
	t.Parallel()
	binary, certs := fixture(t)
	out := filepath.Join(t.TempDir(), "image.tar")
	epoch := func(string) string { return "1700000000" }
	labels := []string{"-label", "org.opencontainers.image.version=v1.2.3", "-label", "org.opencontainers.image.revision=abc=1"}
	if err := run(append([]string{"-binary", binary, "-ca-certificates", certs, "-arch", "amd64", "-o", out}, labels...), epoch); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// make image passes the version as OCI labels; the built-in ones stay.
	for k, want := range map[string]string{"org.opencontainers.image.version": "v1.2.3", "org.opencontainers.image.revision": "abc=1", "org.opencontainers.image.title": "modelgateway"} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if err := run([]string{"-binary", binary, "-o", out, "-label", "novalue"}, epoch); err == nil || !strings.Contains(err.Error(), "KEY=VALUE") {
		t.Errorf("a label without =: %v", err)
	}
	if got := strings.Join(cf.Config.Entrypoint, " "); got != BinaryPath {
		t.Errorf("entrypoint %q, want %s", got, BinaryPath)
	}
	if got := strings.Join(cf.Config.Cmd, " "); got != "serve" {
		t.Errorf("cmd %q, want serve", got)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	if cf.Created.Unix() != 1700000000 {
		t.Errorf("created %v, want SOURCE_DATE_EPOCH", cf.Created)
	}
	env := strings.Join(cf.Config.Env, "\n")
	for _, want := range []string{"GATEWAY_HTTP_ADDR=0.0.0.0:8080", "GATEWAY_GRPC_ADDR=0.0.0.0:9090", "GATEWAY_METRICS_ADDR=0.0.0.0:9464"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}

	files := map[string]*tar.Header{}
	contents := map[string]string{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = h
		data, _ := io.ReadAll(tr)
		contents["/"+h.Name] = string(data)
		if h.ModTime.Unix() != 1700000000 {
			t.Errorf("%s has mtime %v, want SOURCE_DATE_EPOCH", h.Name, h.ModTime)
		}
	}
	if h := files[BinaryPath]; h == nil || h.Mode&0o777 != 0o755 || contents[BinaryPath] != "\x7fELF static gateway stand-in" {
		t.Errorf("binary entry %+v", h)
	}
	if !strings.Contains(contents["/etc/passwd"], "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks user 65532: %q", contents["/etc/passwd"])
	}
	if !strings.Contains(contents["/etc/group"], "nonroot:x:65532:") {
		t.Errorf("/etc/group lacks group 65532: %q", contents["/etc/group"])
	}
	if !strings.Contains(contents["/etc/ssl/certs/ca-certificates.crt"], "BEGIN CERTIFICATE") {
		t.Error("no CA certificates")
	}
	if h := files["/tmp"]; h == nil || h.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp entry %+v, want a sticky world-writable directory", h)
	}
	if h := files["/home/nonroot"]; h == nil || h.Uid != 65532 {
		t.Errorf("home entry %+v, want owned by 65532", h)
	}
}

// Equal inputs give the same digest whatever the time of the build; another epoch changes it.
func TestReproducibleFromSourceDateEpoch(t *testing.T) {
	t.Parallel()
	binary, certs := fixture(t)
	digest := func(epoch string) string {
		e, err := sourceDateEpoch(epoch)
		if err != nil {
			t.Fatal(err)
		}
		img, err := Build(Options{Binary: binary, CACerts: certs, Arch: "arm64", Created: e})
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	first := digest("1700000000")
	if again := digest("1700000000"); again != first {
		t.Errorf("two builds differ: %s and %s", first, again)
	}
	if other := digest("1700000001"); other == first {
		t.Error("another SOURCE_DATE_EPOCH gave the same digest")
	}
}

func TestOCILayout(t *testing.T) {
	t.Parallel()
	binary, certs := fixture(t)
	dir := filepath.Join(t.TempDir(), "oci")
	if err := run([]string{"-binary", binary, "-ca-certificates", certs, "-format", "oci", "-o", dir}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index %+v, %v: want one image", m, err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil || cf.Config.User != "65532:65532" {
		t.Fatalf("config %+v, %v", cf, err)
	}
}

func TestRefusesABundleWithoutCertificates(t *testing.T) {
	t.Parallel()
	binary, _ := fixture(t)
	empty := filepath.Join(t.TempDir(), "empty.crt")
	os.WriteFile(empty, bytes.Repeat([]byte("x"), 10), 0o644)
	if _, err := Build(Options{Binary: binary, CACerts: empty}); err == nil {
		t.Error("a bundle without certificates was accepted")
	}
}
