// Command function-vllm-stack is a Crossplane composition function that turns
// a ProductionStack into the vLLM engines and router that serve it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/crossplane/function-sdk-go"

	"github.com/vllm-project/function-vllm-stack/fn"
	"github.com/vllm-project/function-vllm-stack/internal/adaptersync"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "function-vllm-stack:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	// The same binary runs beside vLLM as the LoRA adapter sync container:
	// one image, one version (internal/adaptersync).
	if len(args) > 0 && args[0] == "adapter-sync" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return adaptersync.Command(ctx, args[1:], nil)
	}
	fs := flag.NewFlagSet("function-vllm-stack", flag.ContinueOnError)
	var (
		debug    = fs.Bool("debug", false, "Emit debug logs in addition to info logs.")
		network  = fs.String("network", "tcp", "Network on which to listen for gRPC connections.")
		address  = fs.String("address", ":9443", "Address at which to listen for gRPC connections.")
		tlsCerts = fs.String("tls-server-certs-dir", os.Getenv("TLS_SERVER_CERTS_DIR"), "Directory containing server certs (tls.key, tls.crt) and the CA used to verify client certificates (ca.crt).")
		insecure = fs.Bool("insecure", false, "Run without mTLS credentials. If you supply this flag --tls-server-certs-dir will be ignored.")
		ttl      = fs.Duration("ttl", fn.DefaultTTL, "How long Crossplane may cache a response; the requeue interval of realtime compositions. The Input's ttl overrides it.")
		maxRecv  = fs.Int("max-recv-message-size", 4*1024*1024, "Maximum size in bytes of a RunFunctionRequest the server accepts.")
		metrics  = fs.String("metrics-address", ":8080", "Address of the Prometheus metrics endpoint; empty disables it.")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ttl <= 0 {
		return fmt.Errorf("--ttl must be positive, got %s", *ttl)
	}
	if !*insecure && *tlsCerts == "" {
		return fmt.Errorf("no credentials: pass --tls-server-certs-dir (or TLS_SERVER_CERTS_DIR), as Crossplane does, or --insecure for local development")
	}
	if *maxRecv <= 0 {
		return fmt.Errorf("--max-recv-message-size must be positive, got %d", *maxRecv)
	}

	log, err := function.NewLogger(*debug)
	if err != nil {
		return fmt.Errorf("cannot create logger: %w", err)
	}
	fn.UseDeterministicCodec()
	return function.Serve(fn.New(log, fn.WithTTL(*ttl)),
		function.Listen(*network, *address),
		function.MTLSCertificates(*tlsCerts),
		function.Insecure(*insecure),
		function.MaxRecvMessageSize(*maxRecv),
		function.WithMetricsServer(*metrics))
}
