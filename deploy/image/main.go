// Command image builds the gateway's container image without a container daemon: the static
// binary on a minimal base made here from files (CA certificates, a passwd and group with the
// non-root user 65532, /tmp), never downloaded. The result is reproducible: every timestamp
// is SOURCE_DATE_EPOCH (0 when unset) and the layers are written in a fixed order, so the
// same binary and certificates give the same image digest.
//
//	go run ./image -binary ../bin/gateway-linux -o ../bin/gateway-image.tar
//
// writes a `docker load` tarball (-format docker, the default) or an OCI image layout
// directory (-format oci).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var o Options
	fs.StringVar(&o.Binary, "binary", "", "the statically linked gateway binary (CGO_ENABLED=0)")
	fs.StringVar(&o.CACerts, "ca-certificates", DefaultCACerts, "PEM bundle of CA certificates to install")
	fs.StringVar(&o.Arch, "arch", runtime.GOARCH, "architecture of the binary")
	fs.StringVar(&o.Tag, "tag", "modelgateway:latest", "image reference written into a docker tarball")
	out := fs.String("o", "", "output: a tarball file (docker) or a directory (oci)")
	format := fs.String("format", "docker", "docker (a `docker load` tarball) or oci (an OCI image layout)")
	fs.Func("label", "an image label KEY=VALUE, repeatable (make image: the OCI version, revision and created)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not KEY=VALUE", v)
		}
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		o.Labels[k] = val
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Binary == "" || *out == "" {
		return errors.New("-binary and -o are required")
	}
	epoch, err := sourceDateEpoch(getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	o.Created = epoch
	img, err := Build(o)
	if err != nil {
		return err
	}
	switch *format {
	case "docker":
		err = WriteTarball(img, o.Tag, *out)
	case "oci":
		err = WriteLayout(img, *out)
	default:
		return fmt.Errorf("-format %q: want docker or oci", *format)
	}
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s (%s)\n", *out, digest, *format)
	return nil
}

// sourceDateEpoch parses SOURCE_DATE_EPOCH (reproducible-builds.org); unset is 0.
func sourceDateEpoch(v string) (time.Time, error) {
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds", v)
	}
	return time.Unix(n, 0).UTC(), nil
}
