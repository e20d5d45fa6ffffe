package upstream

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestGPUMemoryIsTheFacts: the product table is the gpu rows of sizing.tsv,
// where each row cites where its label and memory were seen together.
func TestGPUMemoryIsTheFacts(t *testing.T) {
	b, err := os.ReadFile("../stack/testdata/upstream/sizing.tsv")
	if err != nil {
		t.Fatal(err)
	}
	facts := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		cols := strings.Split(line, "\t")
		if len(cols) < 4 || cols[0] != "gpu" {
			continue
		}
		mib, err := strconv.Atoi(cols[2])
		if err != nil {
			t.Fatalf("sizing.tsv row %q: %v", line, err)
		}
		facts[cols[1]] = mib
	}
	if len(facts) < 10 {
		t.Fatalf("only %d gpu rows in sizing.tsv", len(facts))
	}
	for p, mib := range GPUMemoryMiB {
		if facts[p] != mib {
			t.Errorf("GPUMemoryMiB[%s] = %d, sizing.tsv says %d", p, mib, facts[p])
		}
	}
	for p := range facts {
		if _, ok := GPUMemoryMiB[p]; !ok {
			t.Errorf("sizing.tsv has %s, GPUMemoryMiB does not", p)
		}
	}
	if mib, ok := GPUProductMemory("NVIDIA-L4-SHARED"); !ok || mib != 23034 {
		t.Errorf("GPUProductMemory(NVIDIA-L4-SHARED) = %d, %v", mib, ok)
	}
	if _, ok := GPUProductMemory("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"); ok {
		t.Error("a MIG slice has its GPU's memory")
	}
}
