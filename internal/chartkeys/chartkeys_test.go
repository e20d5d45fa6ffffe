package chartkeys

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestRead(t *testing.T) {
	write := func(content string) string {
		path := filepath.Join(t.TempDir(), "keys.tsv")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	keys, err := Read(write("# comment\nkey\tfirst\tlast\tread\na.b\t0.1.12\tHEAD\tx.yaml:1\nc\tHEAD\tHEAD\ty.yaml:2\n"))
	if err != nil || !slices.Equal(keys, []string{"a.b", "c"}) {
		t.Errorf("Read = %v, %v; want [a.b c]", keys, err)
	}
	for content, want := range map[string]string{
		"key\tfirst\tlast\n":                           `:1: want the header key, first, last, read (tab-separated), got "key\tfirst\tlast"`,
		"key\tfirst\tlast\tread\na\t0.1.11\tHEAD\tx\n": `:2: want key, first and last version (0.1.12 or HEAD) and where it is read: "a\t0.1.11\tHEAD\tx"`,
		"key\tfirst\tlast\tread\na\t0.1.12\tHEAD\t\n":  `:2: want key, first and last version (0.1.12 or HEAD) and where it is read: "a\t0.1.12\tHEAD\t"`,
		"# only comments\n":                            ": no header line key, first, last, read",
	} {
		path := write(content)
		if _, err := Read(path); err == nil || err.Error() != path+want {
			t.Errorf("%q: error %v, want %s%s", content, err, path, want)
		}
	}
}

// The repository's own list reads.
func TestReadChartKeys(t *testing.T) {
	keys, err := Read("../../stack/testdata/helm/chart-keys.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 300 || !slices.Contains(keys, "servingEngineSpec.modelSpec[].modelURL") {
		t.Errorf("%d keys, want more than 300 with servingEngineSpec.modelSpec[].modelURL", len(keys))
	}
}
