package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DefaultCACerts is the Debian/Ubuntu/Alpine bundle of the build machine.
const DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// The image's fixed facts.
const (
	UID        = 65532 // the conventional "nonroot" user of minimal images
	BinaryPath = "/usr/local/bin/gateway"
	certsPath  = "/etc/ssl/certs/ca-certificates.crt"
)

// Options are the inputs of Build; equal inputs give an equal image.
type Options struct {
	Binary  string            // path of the static gateway binary
	CACerts string            // path of a PEM bundle
	Arch    string            // GOARCH of the binary
	Tag     string            // reference written into a docker tarball
	Created time.Time         // every timestamp of the image: SOURCE_DATE_EPOCH
	Labels  map[string]string // added to (or replacing) the title and description labels
}

// Build makes the image: a base layer (passwd, group, CA certificates, /tmp, the user's home)
// and a layer with the binary, configured to run as 65532 with the listeners on all
// interfaces, as a container needs.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("read CA certificates (-ca-certificates): %w", err)
	}
	if !bytes.Contains(certs, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("%s holds no PEM certificate", o.CACerts)
	}
	const home = "/home/nonroot"
	base := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", UID)},
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil,
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%[1]d:%[1]d:nonroot:%[2]s:/sbin/nologin\n", UID, home)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: certsPath[1:], mode: 0o644, data: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: home[1:] + "/", mode: 0o700, dir: true, uid: UID},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	app := []file{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: BinaryPath[1:], mode: 0o755, data: bin},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, files := range [][]file{base, app} {
		l, err := layer(files, o.Created)
		if err != nil {
			return nil, err
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: l, History: v1.History{
			Created: v1.Time{Time: o.Created}, CreatedBy: "deploy/image", Comment: files[len(files)-1].name,
		}}); err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = o.Arch, "linux"
	cf.Created = v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"serve"},
		User:       fmt.Sprintf("%d:%d", UID, UID),
		WorkingDir: home,
		Env: []string{
			"PATH=/usr/local/bin",
			"SSL_CERT_FILE=" + certsPath,
			// Inside a container the loopback defaults of contract.md reach nobody.
			"GATEWAY_HTTP_ADDR=0.0.0.0:8080",
			"GATEWAY_GRPC_ADDR=0.0.0.0:9090",
			"GATEWAY_METRICS_ADDR=0.0.0.0:9464",
		},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}, "9464/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "modelgateway",
			"org.opencontainers.image.description": "Model gateway: one service between applications and AI model providers",
		},
	}
	for k, v := range o.Labels {
		cf.Config.Labels[k] = v
	}
	return mutate.ConfigFile(img, cf)
}

// file is one entry of a layer.
type file struct {
	name string
	mode int64
	data []byte
	dir  bool
	uid  int
}

// layer writes the entries in order with fixed times and owners: the tar, and so the layer's
// digest, depends on nothing but the contents.
func layer(files []file, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: created, Uid: f.uid, Gid: f.uid, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// WriteTarball writes the image as a `docker load` tarball.
func WriteTarball(img v1.Image, tag, path string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	return tarball.WriteToFile(path, ref, img)
}

// WriteLayout writes the image as an OCI image layout directory.
func WriteLayout(img v1.Image, dir string) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img)
}
