package stack

// A spec value reaches a command line only as the value of the option it is
// for, written --name=value in one argv element, so nothing it holds can be
// read as an option (contract 3 of DEVELOPERS.md). Both programs accept that
// form for every option that takes a value, at every release the function
// renders for (test data: stack/testdata/upstream/argv-forms.tsv):
//
//   - vLLM's FlexibleArgumentParser splits an element that starts with "--"
//     at its first '=' and rewrites only the name (underscores to dashes;
//     from 0.9.2 only up to a '.'); the value is passed to argparse as
//     written. Its dotted JSON arguments (--a.b=v, from 0.9.2) are keyed on
//     a '.' in the name, never in the value.
//   - vllm-router's parser is a plain argparse.ArgumentParser.
//
// argparse takes exactly one value after '=', even for nargs='+'; the one
// list of several values the function renders, --lora-modules, is written as
// separate elements, each of which starts with a letter, a digit, '_' or
// '{' (loraModule), never with '-'. Positionals cannot be made safe this
// way: a model that would read as an option is refused (validateModelShapes).

// opt is the argv element that gives option name (with its leading "--")
// the value v.
func opt(name, v string) string { return name + "=" + v }
