package adaptersync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCommandOnce: the subcommand's flags reach the loop; one pass loads.
func TestCommandOnce(t *testing.T) {
	r := newRig(t)
	r.want(`[{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora"}}}]`)
	t.Setenv("HF_TOKEN", r.hub.token)
	var gotName, gotNS string
	err := Command(context.Background(), []string{
		"--once", "--config", r.s.ConfigFile, "--engine", r.engine.srv.URL, "--dir", r.s.Dir,
		"--hf-endpoint", r.hub.srv.URL, "--pod-name", "engine-0", "--pod-namespace", "ns",
	}, func(n, ns string) (PodPatcher, error) { gotName, gotNS = n, ns; return r.pod, nil })
	if err != nil {
		t.Fatal(err)
	}
	if gotName != "engine-0" || gotNS != "ns" || r.engine.loaded()["sql"] != filepath.Join(r.s.Dir, "sql") || r.bumps() != 1 {
		t.Errorf("pod %s/%s, engine %v, %d bumps", gotNS, gotName, r.engine.loaded(), r.bumps())
	}
	if _, err := os.Stat(filepath.Join(r.s.Dir, "sql", "adapter_config.json")); err != nil {
		t.Error(err)
	}
	for _, args := range [][]string{{"--interval=0s"}, {"extra"}} {
		if err := Command(context.Background(), args, func(string, string) (PodPatcher, error) { return r.pod, nil }); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
