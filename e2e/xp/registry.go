package xp

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// A Registry is an in-memory OCI registry (go-containerregistry's
// pkg/registry) serving plain HTTP on 127.0.0.1. Clients built on
// go-containerregistry, Crossplane's package fetcher among them, talk plain
// HTTP to a loopback registry (name.Registry.Scheme is "http" for 127.0.0.1:
// the ping tries https and http and keeps what answers).
type Registry struct {
	// Host is 127.0.0.1:<port>.
	Host string
	srv  *http.Server
	done chan error
}

// StartRegistry serves an empty registry at addr: 127.0.0.1:0 for a free
// port, or a fixed one, e.g. 127.0.0.1:5000 for the registry a Configuration
// was built to depend on (its dependsOn names the registry host; the tests'
// private network namespace has a loopback of its own, so a fixed port clashes
// with nothing outside it).
func StartRegistry(addr string, logf func(string, ...any)) (*Registry, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot serve the registry at %s: %w", addr, err)
	}
	r := &Registry{
		Host: l.Addr().String(),
		srv: &http.Server{
			Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
			ReadHeaderTimeout: 10 * time.Second,
		},
		done: make(chan error, 1),
	}
	go func() { r.done <- r.srv.Serve(l) }()
	if logf != nil {
		logf("OCI registry serving on http://%s", r.Host)
	}
	return r, nil
}

// Port is the registry's TCP port.
func (r *Registry) Port() int {
	_, p, _ := net.SplitHostPort(r.Host)
	var n int
	fmt.Sscan(p, &n)
	return n
}

// Push uploads the single image of an image tarball (`crossplane xpkg build`
// output) as <host>/<repo>:<tag> (repo may have several path components)
// and returns the reference and its digest.
func (r *Registry) Push(ctx context.Context, tarballPath, repo, tag string) (string, v1.Hash, error) {
	img, err := tarball.ImageFromPath(tarballPath, nil)
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("cannot read %s: %w", tarballPath, err)
	}
	ref, err := name.NewTag(r.Host+"/"+repo+":"+tag, name.StrictValidation)
	if err != nil {
		return "", v1.Hash{}, err
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", v1.Hash{}, fmt.Errorf("cannot push %s: %w", ref, err)
	}
	d, err := img.Digest()
	return ref.String(), d, err
}

// Stop closes the registry.
func (r *Registry) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if serr := <-r.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// ExtractFile writes the file at path p of the image in an image tarball's
// flattened filesystem to dest (mode 0755): e.g. the function binary a
// Function package's runtime image carries.
func ExtractFile(tarballPath, p, dest string) error {
	img, err := tarball.ImageFromPath(tarballPath, nil)
	if err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s has no file %s", tarballPath, p)
		}
		if err != nil {
			return err
		}
		if path.Clean("/"+h.Name) != path.Clean("/"+p) || h.Typeflag != tar.TypeReg {
			continue
		}
		f, err := os.OpenFile(dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, tr); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}
