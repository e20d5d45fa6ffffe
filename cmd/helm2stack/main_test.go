package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestExitStatus: the command's contract: stdout holds a stack or nothing,
// the exit status says whether anything was dropped.
func TestExitStatus(t *testing.T) {
	const model = "servingEngineSpec:\n  modelSpec:\n    - {name: m, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: x, pvcStorage: 1Gi%s}\n"
	cases := map[string]struct {
		args      []string
		stdin     string
		code      int
		stdout    bool
		stderrHas string
	}{
		"converted":  {args: []string{"-"}, stdin: strings.ReplaceAll(model, "%s", ""), code: exitConverted, stdout: true},
		"dropped":    {args: []string{"-"}, stdin: strings.ReplaceAll(model, "%s", ", nodeName: n1"), code: exitDropped, stdout: true, stderrHas: "dropped: servingEngineSpec.modelSpec[0].nodeName: not supported"},
		"bad values": {args: []string{"-"}, stdin: strings.ReplaceAll(model, "%s", ", replicaCount: many"), code: exitError, stderrHas: `helm2stack: -: servingEngineSpec.modelSpec[0].replicaCount must be an integer, got "many"`},
		"no file":    {args: []string{"testdata/none.yaml"}, code: exitError, stderrHas: "no such file"},
		"no args":    {args: nil, code: exitUsage, stderrHas: "usage: helm2stack"},
		"bad flag":   {args: []string{"--nme", "x", "-"}, code: exitUsage, stderrHas: "flag provided but not defined: -nme"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if got := stdout.Len() > 0; got != tc.stdout {
				t.Errorf("stdout written: %v, want %v:\n%s", got, tc.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.stderrHas) {
				t.Errorf("stderr has no %q:\n%s", tc.stderrHas, stderr.String())
			}
		})
	}
}

// TestNameAndNamespace: the flags name the stack; the name defaults to vllm.
func TestNameAndNamespace(t *testing.T) {
	values := "servingEngineSpec:\n  modelSpec:\n    - {name: m, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: x, pvcStorage: 1Gi}\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-"}, "metadata:\n  name: vllm\n"},
		{[]string{"--name", "prod", "--namespace", "llm", "-"}, "metadata:\n  name: prod\n  namespace: llm\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, strings.NewReader(values), &stdout, &stderr); code != exitConverted {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("%v: no %q in\n%s", tc.args, tc.want, stdout.String())
		}
	}
}
