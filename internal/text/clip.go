// Package text holds the string helpers that the stack library and the
// status share.
package text

// Clip shortens s to at most n characters, marking the cut with "...".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}
