package render_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-project/function-vllm-stack/test/internal/harness"
)

// validate runs `hack/validate.sh --rendered FILE` (offline `crossplane beta
// validate` against the XRD, with the schema cache the script prepares) with
// the given extensions (see extensionsFor).
func validate(t *testing.T, file, extensions string) harness.Result {
	t.Helper()
	crossplane := harness.Tool(t, "CROSSPLANE", "test-render")
	env := []string{"CROSSPLANE=" + crossplane, "VALIDATE_ARGS=", "VALIDATE_EXTENSIONS=" + extensions}
	// The first run seeds the schema cache: the others wait for it.
	prime.Lock()
	if prime.done {
		prime.Unlock()
	} else {
		defer func() {
			prime.done = true
			prime.Unlock()
		}()
	}
	r, err := harness.Run(context.Background(), root, env, "bash", "hack/validate.sh", "--rendered", file)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(r.Stdout, []byte("downloading")) || bytes.Contains(r.Stderr, []byte("downloading")) {
		t.Fatalf("crossplane beta validate tried to download schemas:\n%s%s", r.Stdout, r.Stderr)
	}
	return r
}

var prime struct {
	sync.Mutex
	done bool
}

// stream writes the YAML documents of files (paths or contents) to one file.
func stream(t *testing.T, docs [][]byte) string {
	t.Helper()
	var b bytes.Buffer
	for _, d := range docs {
		b.WriteString("---\n")
		b.Write(d)
		b.WriteString("\n")
	}
	file := filepath.Join(t.TempDir(), "stream.yaml")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func readFiles(t *testing.T, files ...string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// validated checks a validate run passed with n resources of which the lines
// "[✓] <gvk> validated successfully" in ok are all there (with their count).
func validated(t *testing.T, r harness.Result, ok map[string]int) {
	t.Helper()
	if r.ExitCode != 0 || !bytes.Contains(r.Stdout, []byte(" 0 failure cases")) {
		t.Fatalf("crossplane beta validate: exit code %d, want 0 and no failures:\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	for line, n := range ok {
		want := "[✓] " + line + " validated successfully"
		if got := strings.Count(string(r.Stdout), want+"\n"); got != n {
			t.Errorf("%d lines %q, want %d:\n%s", got, want, n, r.Stdout)
		}
	}
}

// extensionsFor is what validate checks against: the XRD and the Input CRD.
func extensionsFor(xrdFile string) string {
	return filepath.Join(root, xrdFile) + "," + filepath.Join(root, "package", "input")
}

// TestValidateRendered renders every stack with --include-full-xr and the
// XRD's defaults applied (--xrd, as the API server would), validates the XRs
// (spec and the status the function wrote) against their XRD, and checks that
// applying the XRD's defaults first changes nothing the function composes.
func TestValidateRendered(t *testing.T) {
	tools(t) // skips (or fails with CI=true) without the CLI and the function
	var mu sync.Mutex
	rendered := map[string][][]byte{} // XRD -> renders
	xrs := map[string]map[string]int{}
	t.Run("render", func(t *testing.T) {
		for _, s := range stacks {
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				out := mustRender(t, s.xr, s.composition, append(s.renderArgs(), "--include-full-xr", "--xrd="+s.xrd)...)
				got := splitDocs(t, out)
				mu.Lock()
				rendered[s.xrd] = append(rendered[s.xrd], out)
				if xrs[s.xrd] == nil {
					xrs[s.xrd] = map[string]int{}
				}
				xrs[s.xrd]["serving.vllm.ai/v1alpha1, Kind="+got[0].kind()+", "+got[0].meta("name")]++
				mu.Unlock()

				// The XRD's defaults and the function's agree: the same
				// objects and status as the golden render without --xrd.
				golden, err := os.ReadFile(goldenPath(s.name))
				if err != nil {
					t.Fatal(err)
				}
				want := splitDocs(t, golden)
				if diff := cmp.Diff(want[0].obj["status"], got[0].obj["status"]); diff != "" {
					t.Errorf("XR status with the XRD's defaults differs from %s (-golden +got):\n%s", rel(goldenPath(s.name)), diff)
				}
				if len(got) != len(want) {
					t.Fatalf("%d objects with the XRD's defaults, %d in %s", len(got), len(want), rel(goldenPath(s.name)))
				}
				for i := 1; i < len(got); i++ {
					if diff := cmp.Diff(want[i].obj, got[i].obj); diff != "" {
						t.Errorf("%s %s differs with the XRD's defaults applied (-golden +got):\n%s", got[i].kind(), got[i].meta("name"), diff)
					}
				}
			})
		}
	})
	for _, x := range []string{xrd, legacyXRD} {
		t.Run("validate/"+filepath.Base(filepath.Dir(x))+"/"+filepath.Base(x), func(t *testing.T) {
			t.Parallel()
			if len(rendered[x]) == 0 {
				t.Fatalf("nothing rendered for %s", x)
			}
			validated(t, validate(t, stream(t, rendered[x]), extensionsFor(x)), xrs[x])
		})
	}
}

// TestValidateManifests validates the manifests users apply, as written, and
// the Compositions (their function Input against the Input CRD).
func TestValidateManifests(t *testing.T) {
	t.Run("namespaced", func(t *testing.T) {
		t.Parallel()
		r := validate(t, stream(t, readFiles(t,
			"example/xr.yaml", "example/stacks/multi-model.yaml", "example/stacks/lmcache.yaml", "example/stacks/kvaware.yaml", "example/stacks/session.yaml",
			"example/stacks/production.yaml", "example/stacks/disaggregated.yaml", "example/stacks/disaggregated-lmcache.yaml", "example/stacks/multi-node.yaml", "example/stacks/wide-ep.yaml", "example/stacks/inference-extension.yaml", "example/stacks/disaggregated-inference-extension.yaml", "example/stacks/runtime-adapters.yaml", "example/stacks/observability.yaml", "example/stacks/kv-offload.yaml", "example/stacks/model-cache.yaml", "example/stacks/precise-prefix.yaml", "test/render/testdata/full.yaml", "test/render/testdata/warnings.yaml",
			"example/composition.yaml", "composition/composition.yaml", "composition/legacy/composition.yaml")), extensionsFor(xrd))
		const ps = "serving.vllm.ai/v1alpha1, Kind=ProductionStack, "
		validated(t, r, map[string]int{
			ps + "test-stack": 2, ps + "multi": 1, ps + "cached": 1, ps + "chat": 1, ps + "prod": 1, ps + "pd": 1, ps + "pd-lmcache": 1, ps + "big": 1, ps + "wide-ep": 1, ps + "gie": 1, ps + "pd-gie": 1, ps + "adapters": 1, ps + "observed": 1, ps + "offload": 1, ps + "weights": 1, ps + "full": 1,
			"apiextensions.crossplane.io/v1, Kind=Composition, productionstacks.serving.vllm.ai":  2,
			"apiextensions.crossplane.io/v1, Kind=Composition, xproductionstacks.serving.vllm.ai": 1,
			"vllmstack.fn.crossplane.io/v1beta1, Kind=Input, ":                                    3,
		})
	})
	t.Run("legacy", func(t *testing.T) {
		t.Parallel()
		r := validate(t, stream(t, readFiles(t, "example/claim.yaml", "example/stacks/legacy-xr.yaml")), extensionsFor(legacyXRD))
		validated(t, r, map[string]int{
			"serving.vllm.ai/v1alpha1, Kind=ProductionStack, test-stack":        1, // the claim
			"serving.vllm.ai/v1alpha1, Kind=XProductionStack, test-stack-7xk2p": 1,
		})
	})
}

// TestValidateRejects: manifests with an unknown field, out-of-range values and
// broken cross-field (CEL) rules fail validation, each with the exact error.
func TestValidateRejects(t *testing.T) {
	const prefix = "serving.vllm.ai/v1alpha1, Kind=ProductionStack, test-stack : "
	cases := []struct {
		file string
		want []string
	}{
		{file: "test/render/testdata/invalid/unknown-field.yaml", want: []string{
			`[x] schema validation error ` + prefix + `spec.vllmConfig.gpuMemoryUtilisation: Invalid value: "gpuMemoryUtilisation": unknown field: "gpuMemoryUtilisation"`,
		}},
		{file: "test/render/testdata/invalid/replicas.yaml", want: []string{
			`[x] schema validation error ` + prefix + `spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
		}},
		{file: "test/render/testdata/invalid/router-type.yaml", want: []string{
			`[x] schema validation error ` + prefix + `spec.routerConfig.routerType: Unsupported value: "random": supported values: "roundrobin", "session", "prefixaware", "kvaware"`,
		}},
		{file: "test/render/testdata/bad.yaml", want: []string{
			`[x] CEL validation error ` + prefix + `spec.vllmConfig.gpuMemoryUtilization: Invalid value: "1.5": gpuMemoryUtilization must be a number greater than 0 and at most 1, e.g. "0.9"`,
			`[x] CEL validation error ` + prefix + `spec.model: Invalid value: enableTool requires toolCallParser (for example hermes, llama3_json or mistral): vLLM refuses to start without it`,
		}},
	}
	var files []string
	want := map[string]int{}
	for _, c := range cases {
		files = append(files, c.file)
		for _, w := range c.want {
			want[w]++
		}
	}
	r := validate(t, stream(t, readFiles(t, files...)), extensionsFor(xrd))
	if r.ExitCode == 0 {
		t.Errorf("crossplane beta validate accepted them:\n%s", r.Stdout)
	}
	// Every expected error line, and no other.
	got := map[string]int{}
	for _, l := range strings.Split(string(r.Stdout), "\n") {
		if strings.HasPrefix(l, "[x] ") {
			got[l]++
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("validation errors (-want +got):\n%s\noutput:\n%s", diff, r.Stdout)
	}
	total := "Total " + strconv.Itoa(len(cases)) + " resources: 0 missing schemas, 0 success cases, " + strconv.Itoa(len(cases)) + " failure cases"
	if !bytes.Contains(r.Stdout, []byte(total)) {
		t.Errorf("want %q:\n%s", total, r.Stdout)
	}
}
