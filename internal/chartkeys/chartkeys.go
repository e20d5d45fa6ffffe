// Package chartkeys reads stack/testdata/helm/chart-keys.tsv, the values keys of
// the vLLM production-stack Helm chart at vllm-stack-0.1.12 and HEAD (its
// header says how they were chosen), for the tests that hold docs/helm.md's
// Helm table (fn) and the converter's table (helm2stack) to it.
package chartkeys

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Read returns the key column of the file at path: after its # comments, a
// header line key, first, last, read, then one key a line with the first
// and last version that have it (0.1.12 or HEAD) and where the chart reads
// it.
func Read(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var keys []string
	s := bufio.NewScanner(f)
	header := true
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if header {
			if !slices.Equal(cols, []string{"key", "first", "last", "read"}) {
				return nil, fmt.Errorf("%s:%d: want the header key, first, last, read (tab-separated), got %q", path, n, line)
			}
			header = false
			continue
		}
		if len(cols) != 4 || cols[0] == "" || cols[3] == "" || !isVersion(cols[1]) || !isVersion(cols[2]) {
			return nil, fmt.Errorf("%s:%d: want key, first and last version (0.1.12 or HEAD) and where it is read: %q", path, n, line)
		}
		keys = append(keys, cols[0])
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if header {
		return nil, fmt.Errorf("%s: no header line key, first, last, read", path)
	}
	return keys, nil
}

func isVersion(s string) bool { return s == "0.1.12" || s == "HEAD" }
