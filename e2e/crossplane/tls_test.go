//go:build e2e_crossplane

package crossplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

// TestFunctionMTLS: the function process serves the certificate Crossplane
// generated for the Function's Service (Secret <function>-tls-server) and
// accepts only clients with a certificate from Crossplane's CA, as in a
// cluster: a client presenting core's certificate (Secret
// crossplane-tls-client) completes the handshake for the endpoint's host
// name; one without a certificate is refused.
func TestFunctionMTLS(t *testing.T) {
	ctx := context.Background()
	client, err := admin.Core.Secrets(xp.Namespace).Get(ctx, xp.TLSClientSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(client.Data["ca.crt"]) {
		t.Fatalf("Secret %s has no CA certificate", xp.TLSClientSecret)
	}
	cert, err := tls.X509KeyPair(client.Data["tls.crt"], client.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	host := FunctionName + "." + xp.Namespace // the endpoint's host

	// dial completes a TLS handshake and one read: with TLS 1.3 a server
	// that refuses the client's certificate says so after the handshake.
	dial := func(certs []tls.Certificate) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fn.Address, &tls.Config{
			RootCAs: roots, ServerName: host, Certificates: certs, MinVersion: tls.VersionTLS12,
			NextProtos: []string{"h2"},
		})
		if err != nil {
			return err
		}
		defer conn.Close()
		if err := conn.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
			return err
		}
		// An accepted client reads the server's HTTP/2 SETTINGS frame.
		n, err := conn.Read(make([]byte, 9))
		if n > 0 {
			return nil
		}
		return err
	}
	if err := dial([]tls.Certificate{cert}); err != nil {
		t.Errorf("with Crossplane's client certificate, connecting to %s as %s: %v", fn.Address, host, err)
	}
	err = dial(nil)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without a client certificate: got %v, want the server to refuse the handshake", err)
	}
}
