// Command helm2stack converts a values file of the vLLM production-stack
// Helm chart (vllm-stack 0.1.12) into a ProductionStack manifest:
//
//	go run ./cmd/helm2stack [--name NAME] [--namespace NS] values.yaml > stack.yaml
//
// The manifest goes to stdout; what could not be converted, notes and the
// Secrets to create go to stderr. Exit status: 0 every key converted, 3 the
// stack was written but keys were dropped (listed on stderr), 1 the values
// could not be converted (nothing on stdout), 2 wrong usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/vllm-project/function-vllm-stack/helm2stack"
)

// Exit statuses.
const (
	exitConverted = 0
	exitError     = 1
	exitUsage     = 2
	exitDropped   = 3
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("helm2stack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "vllm", "name of the ProductionStack: the chart's release name keeps the release's object names")
	namespace := fs.String("namespace", "", "namespace of the ProductionStack (unset: kubectl's current namespace)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: helm2stack [--name NAME] [--namespace NS] VALUES|-\n\n"+
			"Converts a values file of the vLLM production-stack Helm chart (vllm-stack %s) into a ProductionStack on stdout.\n"+
			"Exit status: 0 all converted, 3 converted with keys dropped (see stderr), 1 error (nothing written), 2 usage.\n\n", helm2stack.ChartVersion)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	values, err := readValues(fs.Arg(0), stdin)
	if err != nil {
		fmt.Fprintln(stderr, "helm2stack:", err)
		return exitError
	}
	res, err := helm2stack.Convert(values, helm2stack.Options{Name: *name, Namespace: *namespace})
	if err != nil {
		fmt.Fprintf(stderr, "helm2stack: %s: %v\n", fs.Arg(0), err)
		return exitError
	}
	manifest, err := helm2stack.Manifest(res.Stack)
	if err != nil {
		fmt.Fprintln(stderr, "helm2stack:", err)
		return exitError
	}
	report(stderr, res)
	if _, err := stdout.Write(manifest); err != nil {
		fmt.Fprintln(stderr, "helm2stack:", err)
		return exitError
	}
	if len(res.Dropped) > 0 {
		return exitDropped
	}
	return exitConverted
}

func readValues(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}

// report writes the findings: dropped keys, notes, then the Secrets.
func report(w io.Writer, res *helm2stack.Result) {
	for _, f := range res.Dropped {
		fmt.Fprintln(w, "dropped:", f)
	}
	for _, f := range res.Notes {
		fmt.Fprintln(w, "note:", f)
	}
	for _, cmd := range res.SecretCommands() {
		fmt.Fprintln(w, "secret: the stack reads literal values of the values file from a Secret; create it before applying the stack:")
		fmt.Fprintln(w, "  "+cmd)
	}
}
