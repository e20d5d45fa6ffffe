package stack

// Identity is where a stack's objects live and what they are named after.
type Identity struct {
	Name      string // the user's name of the stack: the XR's, or the claim's
	Namespace string
	Legacy    bool // a v1 (LegacyCluster) XR, possibly from a claim
}
