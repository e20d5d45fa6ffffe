package upstream

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// vllmEnvsTSV lists the VLLM_* variables each examined vLLM release reads
// (the keys of environment_variables in its vllm/envs.py), with citations;
// hack/vllm-envs.sh regenerates it from the vLLM history. A new release
// gets a snapshot line there, not code here.
//
//go:embed vllm_envs.tsv
var vllmEnvsTSV string

// VLLMEnvTable is vllm_envs.tsv read: the examined releases in order, and
// for each variable the ranges of them that declare it.
type VLLMEnvTable struct {
	snapshots []Version
	declared  map[string][][2]Version // name -> [first, last] snapshot ranges
	names     []string                // the keys of declared, sorted
	words     map[string][]string     // name -> its words after VLLM_
}

// VLLMEnvs is vllm_envs.tsv read.
var VLLMEnvs = mustParseVLLMEnvs(vllmEnvsTSV)

func mustParseVLLMEnvs(tsv string) VLLMEnvTable {
	t, err := parseVLLMEnvs(tsv)
	if err != nil {
		panic("vllm_envs.tsv: " + err.Error())
	}
	return t
}

func parseVLLMEnvs(tsv string) (VLLMEnvTable, error) {
	t := VLLMEnvTable{declared: map[string][][2]Version{}}
	for i, line := range strings.Split(strings.TrimSpace(tsv), "\n") {
		if i == 0 {
			continue // the header
		}
		if rest, ok := strings.CutPrefix(line, "#   snapshot "); ok {
			s, ok := ParseVersion(strings.Fields(rest)[0])
			if !ok || (len(t.snapshots) > 0 && !t.snapshots[len(t.snapshots)-1].Less(s)) {
				return t, fmt.Errorf("line %d: snapshot releases must be release numbers in increasing order", i+1)
			}
			t.snapshots = append(t.snapshots, s)
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return t, fmt.Errorf("line %d: want 4 tab-separated fields, got %d", i+1, len(f))
		}
		first, ok1 := ParseVersion(f[1])
		last, ok2 := ParseVersion(f[2])
		if !ok1 || !ok2 || !slices.Contains(t.snapshots, first) || !slices.Contains(t.snapshots, last) {
			return t, fmt.Errorf("line %d: %s..%s are not examined releases", i+1, f[1], f[2])
		}
		t.declared[f[0]] = append(t.declared[f[0]], [2]Version{first, last})
	}
	if len(t.snapshots) == 0 {
		return t, fmt.Errorf("no snapshot lines")
	}
	// Closest runs for each unread variable on every call: what it compares
	// is worked out once.
	t.names = slices.Sorted(maps.Keys(t.declared))
	t.words = make(map[string][]string, len(t.names))
	for _, n := range t.names {
		t.words[n] = nameWords(n)
	}
	return t, nil
}

// declaredAt reports whether snapshot s declares the variable.
func (t VLLMEnvTable) declaredAt(name string, s Version) bool {
	for _, r := range t.declared[name] {
		if s.AtLeast(r[0]) && !r[1].Less(s) {
			return true
		}
	}
	return false
}

// around is the examined release at or before r and the one at or after it
// (the same one when r was examined); the newest stands for anything newer,
// the oldest for anything older.
func (t VLLMEnvTable) around(r Version) (before, after Version) {
	before, after = t.snapshots[0], t.snapshots[len(t.snapshots)-1]
	for _, s := range t.snapshots {
		if !r.Less(s) {
			before = s
		}
	}
	for i := len(t.snapshots) - 1; i >= 0; i-- {
		if !t.snapshots[i].Less(r) {
			after = t.snapshots[i]
		}
	}
	if r.AtLeast(t.snapshots[len(t.snapshots)-1]) {
		after = before
	}
	return before, after
}

// MayRead reports whether release r may read the variable: a release
// between two examined ones counts as reading what either of them reads,
// so the function only warns about what it knows.
func (t VLLMEnvTable) MayRead(name string, r Version) bool {
	before, after := t.around(r)
	return t.declaredAt(name, before) || t.declaredAt(name, after)
}

// Closest is the variable release r reads whose name is nearest to name:
// the most words in common (VLLM_LOG_LEVEL and VLLM_LOGGING_LEVEL share
// LOG/LOGGING and LEVEL), then the fewest single-character edits, then the
// first in order.
func (t VLLMEnvTable) Closest(name string, r Version) string {
	before, after := t.around(r)
	key := closestKey{name, before, after}
	if c, ok := closestCache.Load(key); ok {
		return c.(string)
	}
	best := t.closest(name, before, after)
	// The names are the user's: the cache stops growing at a bound.
	if closestCached.Add(1) <= maxClosestCached {
		closestCache.Store(key, best)
	}
	return best
}

// Closest's answers, by name and the examined releases around the release:
// a stack's unread variables are the same on every reconcile.
var (
	closestCache  sync.Map // closestKey -> string
	closestCached atomic.Int64
)

const maxClosestCached = 4096

type closestKey struct {
	name          string
	before, after Version
}

func (t VLLMEnvTable) closest(name string, before, after Version) string {
	words := nameWords(name)
	best, bestShared, bestD := "", -1, 0
	for _, n := range t.names {
		if !t.declaredAt(n, before) && !t.declaredAt(n, after) {
			continue
		}
		shared := sharedWords(words, t.words[n])
		if shared < bestShared {
			continue
		}
		if d := editDistance(name, n); shared > bestShared || d < bestD {
			best, bestShared, bestD = n, shared, d
		}
	}
	return best
}

// nameWords are the words of a variable's name after VLLM_.
func nameWords(name string) []string { return strings.Split(strings.TrimPrefix(name, "VLLM_"), "_") }

// sharedWords counts the words of one name that the other name has too, a
// word matching another that starts with it (LOG, LOGGING).
func sharedWords(a, b []string) int {
	n := 0
	for _, x := range a {
		for _, y := range b {
			if x == y || (min(len(x), len(y)) >= 3 && (strings.HasPrefix(x, y) || strings.HasPrefix(y, x))) {
				n++
				break
			}
		}
	}
	return n
}

// editDistance is the Levenshtein distance of two names; names of vLLM's
// variables are short, and their rows fit on the stack.
func editDistance(a, b string) int {
	var prevBuf, curBuf [64]int
	prev, cur := prevBuf[:0], curBuf[:0]
	if len(b) >= len(prevBuf) {
		prev, cur = make([]int, 0, len(b)+1), make([]int, 0, len(b)+1)
	}
	prev, cur = prev[:len(b)+1], cur[:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Snapshots are the releases whose vllm/envs.py the table was read from, in
// order.
func (t VLLMEnvTable) Snapshots() []Version { return t.snapshots }
