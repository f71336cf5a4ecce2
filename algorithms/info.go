package algorithms

// KeyInfo describes a key's stored state, as RL.INFO reports it: the
// algorithm, the instant the state becomes absent, and the state's fields
// as stored (instants in unix nanoseconds).
type KeyInfo struct {
	Algo   Algo // None: the key holds no state
	Expire int64
	Fields []Field
}

// Field is one named part of a state: an integer, or a list of integers
// when List is not nil (pairs of integers when Pairs is set).
type Field struct {
	Name  string
	Value int64
	List  []int64
	Pairs bool
}
