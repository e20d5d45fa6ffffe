package validate

import (
	"fmt"
	"regexp"
)

// The shapes of the model fields that reach vLLM's command line, each the
// XRD's pattern of the field (xrd/v1alpha1/types.go; TestShapesAreTheXRDs
// compares them), so the API server and the function refuse the same values.
// None matches a value that starts with '-': the model is vLLM's positional
// argument, which argparse would read as an option (a model of
// --trust-remote-code would serve vLLM's default model with remote code
// enabled). Every pattern also matches "", which means unset.
var (
	// LocalPath: an absolute path, without control characters.
	LocalPath = regexp.MustCompile(`^(/[^\x00-\x1f\x7f]*)?$`)
	// HFIDOrPath: a Hugging Face repository ID (name or organization/name,
	// each of letters, digits, '.', '_' and '-', starting with a letter, a
	// digit or '_' as the Hub requires), or an absolute path.
	HFIDOrPath = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)?|/[^\x00-\x1f\x7f]*)?$`)
	// ModelRef: what vLLM loads as its model: a Hugging Face repository ID,
	// an absolute path, or a URL without spaces such as s3://bucket/model
	// (vLLM's object-storage loaders).
	ModelRef = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)?|/[^\x00-\x1f\x7f]*|[a-z][a-z0-9+.-]*://[^\x00-\x20\x7f]+)?$`)
	// ServedName: a model name in the OpenAI API, such as llama3,
	// meta-llama/Llama-3.2-1B-Instruct or llama3:8b.
	ServedName = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_.:/-]*)?$`)
	// ParserName: a tool call parser, such as hermes, llama3_json or
	// granite-20b-fc.
	ParserName = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_.-]*)?$`)
)

// Fixes the messages suggest, one per shape.
const (
	fixLocalPath  = "use an absolute path to the model files, such as /data/models/llama-3 (starting with '/', without control characters)"
	fixModelURL   = "use a Hugging Face model ID such as meta-llama/Llama-3.2-1B-Instruct (letters, digits, '.', '_' and '-', starting with a letter, digit or '_', with at most one '/' between organization and name), an absolute path, or a URL such as s3://bucket/model"
	fixServedName = "use letters, digits, '.', '_', ':', '/' and '-', starting with a letter, digit or '_', such as llama3 or meta-llama/Llama-3.2-1B-Instruct"
	fixParser     = "use a parser name such as hermes, llama3_json or mistral (letters, digits, '.', '_' and '-', starting with a letter, digit or '_')"
	fixLoRAPath   = "use a Hugging Face adapter ID such as org/sql-lora or an absolute path such as /data/lora-adapters/sql"
)

// validateModelShapes checks the model fields of one model (at p, such as
// spec.model) that become vLLM's arguments against their shapes.
func validateModelShapes(f *Findings, p string, path, modelURL, served, parser string) {
	shape(f, p+".path", path, LocalPath, fixLocalPath)
	shape(f, p+".modelURL", modelURL, ModelRef, fixModelURL)
	shape(f, p+".servedModelName", served, ServedName, fixServedName)
	shape(f, p+".toolCallParser", parser, ParserName, fixParser)
}

// validateLoRAShape checks one LoRA adapter: its name becomes a model name,
// its path what vLLM loads.
func validateLoRAShape(f *Findings, p string, i int, name, path string) {
	at := fmt.Sprintf("%s.loraAdapters[%d]", p, i)
	shape(f, at+".name", name, ServedName, fixServedName)
	shape(f, at+".path", path, HFIDOrPath, fixLoRAPath)
}

func shape(f *Findings, field, v string, re *regexp.Regexp, fix string) {
	if !re.MatchString(v) {
		f.errorf("%s %q is invalid: %s", field, v, fix)
	}
}
