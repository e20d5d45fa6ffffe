package stack

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestDNSLabel(t *testing.T) {
	for in, want := range map[string]string{
		"Llama-3.2-1B-Instruct":   "llama-3-2-1b-instruct",
		"meta-llama/Llama-3.1-8B": "meta-llama-llama-3-1-8b",
		"--a__b--":                "a-b",
		"Qwen2.5 7B":              "qwen2-5-7b",
		"!!!":                     "",
		"ünïcode":                 "n-code",
		"already-valid-123":       "already-valid-123",
	} {
		if got := dnsLabel(in); got != want {
			t.Errorf("dnsLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShorten(t *testing.T) {
	if got := shorten("short", 63); got != "short" {
		t.Errorf("a name within the limit must not change, got %q", got)
	}
	long := strings.Repeat("a", 60) + "-engine-service"
	got := shorten(long, 63)
	if len(got) != 63 {
		t.Errorf("len = %d, want 63: %q", len(got), got)
	}
	if got != shorten(long, 63) {
		t.Error("shorten must be deterministic")
	}
	other := shorten(strings.Repeat("a", 60)+"-engine-servicf", 63)
	if got == other {
		t.Errorf("two long names with a shared prefix must differ: %q", got)
	}
	if msgs := validation.IsDNS1035Label(got); len(msgs) > 0 {
		t.Errorf("shortened name %q is not a DNS label: %v", got, msgs)
	}
	if got != "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-"+got[55:] || len(got[55:]) != 8 {
		t.Errorf("want a 54-character prefix, '-' and an 8-character hash, got %q", got)
	}
}
