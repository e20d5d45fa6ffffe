package main

import "testing"

// TestRunRejectsBadFlags: flag errors are reported before anything listens.
func TestRunRejectsBadFlags(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"ZeroTTL":       {args: []string{"--insecure", "--ttl=0s"}, want: "--ttl must be positive, got 0s"},
		"NegativeRecv":  {args: []string{"--insecure", "--max-recv-message-size=-1"}, want: "--max-recv-message-size must be positive, got -1"},
		"UnknownFlag":   {args: []string{"--nope"}, want: "flag provided but not defined: -nope"},
		"NoCredentials": {args: []string{"--address=127.0.0.1:0", "--metrics-address="}, want: "no credentials: pass --tls-server-certs-dir (or TLS_SERVER_CERTS_DIR), as Crossplane does, or --insecure for local development"},
		"SyncBadFlag":   {args: []string{"adapter-sync", "--nope"}, want: "flag provided but not defined: -nope"},
		"SyncNoCluster": {args: []string{"adapter-sync", "--pod-name=p", "--pod-namespace=ns"}, want: "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset"},
		"MissingCerts":  {args: []string{"--tls-server-certs-dir=/nonexistent", "--metrics-address="}, want: "cannot apply ServeOption: cannot load X509 keypair: open /nonexistent/tls.crt: no such file or directory"},
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(tc.args)
			if err == nil || err.Error() != tc.want {
				t.Errorf("run(%q) error = %v, want %q", tc.args, err, tc.want)
			}
		})
	}
}
