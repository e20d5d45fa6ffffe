// Command imagebuild writes a minimal OCI runtime image for the function as a
// `docker save`-style tarball, without a Docker engine:
//
//   - empty base (no OS files), one layer holding the binary at /function
//   - entrypoint ["/function"], user 65532, exposed port 9443/tcp
//   - os/arch from the flags (default linux/amd64)
//   - reproducible: fixed timestamps (SOURCE_DATE_EPOCH, else the Unix epoch)
//
// The tarball is what `crossplane xpkg build --embed-runtime-image-tarball`
// takes.
//
//	imagebuild -binary _output/bin/linux_amd64/function -output _output/image.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run() error {
	binary := flag.String("binary", "", "path of the static function binary to put at /function (required)")
	output := flag.String("output", "", "path of the image tarball to write (required)")
	tag := flag.String("tag", "function-vllm-stack-runtime:latest", "image reference recorded in the tarball manifest")
	osName := flag.String("os", "linux", "image OS")
	arch := flag.String("arch", "amd64", "image architecture")
	user := flag.String("user", "65532", "user the container runs as")
	port := flag.String("port", "9443/tcp", "exposed port")
	flag.Parse()

	if *binary == "" || *output == "" || flag.NArg() != 0 {
		flag.Usage()
		return fmt.Errorf("-binary and -output are required")
	}

	created, err := buildTime()
	if err != nil {
		return err
	}

	bin, err := os.ReadFile(*binary)
	if err != nil {
		return fmt.Errorf("read binary: %w", err)
	}

	layerTar, err := binaryLayer(bin, created)
	if err != nil {
		return err
	}

	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return fmt.Errorf("create layer: %w", err)
	}

	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "imagebuild: COPY function /function",
			Comment:   "function-vllm-stack runtime",
		},
	})
	if err != nil {
		return fmt.Errorf("append layer: %w", err)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}

	cf = cf.DeepCopy()
	cf.OS = *osName
	cf.Architecture = *arch
	cf.Created = v1.Time{Time: created}
	cf.Config.Entrypoint = []string{"/function"}
	cf.Config.Cmd = nil
	cf.Config.User = *user
	cf.Config.WorkingDir = "/"
	cf.Config.ExposedPorts = map[string]struct{}{*port: {}}
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return fmt.Errorf("set config: %w", err)
	}

	ref, err := name.NewTag(*tag)
	if err != nil {
		return fmt.Errorf("parse -tag: %w", err)
	}

	if err := tarball.WriteToFile(*output, ref, img); err != nil {
		return fmt.Errorf("write %s: %w", *output, err)
	}

	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}

	fmt.Printf("wrote %s (%s, %s/%s, image %s)\n", *output, ref, *osName, *arch, digest)

	return nil
}

// buildTime returns SOURCE_DATE_EPOCH if set, else the Unix epoch, so that the
// same binary always gives the same image digest.
func buildTime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}

	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
	}

	return time.Unix(sec, 0).UTC(), nil
}

// binaryLayer returns an uncompressed tar holding bin at /function (0755, root).
func binaryLayer(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer

	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     "function",
		Mode:     0o755,
		Size:     int64(len(bin)),
		ModTime:  mtime,
		Format:   tar.FormatPAX,
	}); err != nil {
		return nil, fmt.Errorf("tar header: %w", err)
	}

	if _, err := tw.Write(bin); err != nil {
		return nil, fmt.Errorf("tar write: %w", err)
	}

	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar close: %w", err)
	}

	return buf.Bytes(), nil
}
